"""The components feature: a component offered on a live site (spec operation 9), its appliances and grants provisioned."""
