"""Pure halves of the RocketMQ transport: the NameServer address and topic checks."""
