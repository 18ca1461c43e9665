"""Pure halves of the HTTP side (web/): byte ranges, sessions and the CSRF rule, what a
token's claims mean, the scrape token of /metrics, the export-type listing, the identity
provider's key fetches, the progress stream's decisions."""
