"""Pure halves of the HTTP side (web/): byte ranges, sessions, export-type
listing, the progress stream's decisions."""
