"""Pure core: values and decisions. No IO; time, attempts and randomness are arguments."""
