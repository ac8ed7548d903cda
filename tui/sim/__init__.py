"""The embedded simulated site: cloud XML-RPC, OneFlow REST, marketplace HTTP, git repositories."""
