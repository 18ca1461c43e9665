"""Pure halves of the Provider client and provider-check: the batch contract,
its rules, the cursor loop's checks, the Provider map."""
