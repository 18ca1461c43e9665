"""The supervised actors of one instance: publisher, consumer slots and execution,
lease keeper, claim gate, reconciler, DLQ handler, sampler."""
