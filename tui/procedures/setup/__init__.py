"""The setup feature: the guided first-time checklist, read from the live site and run step by step."""
