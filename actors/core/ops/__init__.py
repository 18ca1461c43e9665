"""Pure halves of the operator's commands: their JSON and the troubleshooting
words."""
