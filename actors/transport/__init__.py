"""Command transports: the embedded bus and RocketMQ, behind one interface."""
