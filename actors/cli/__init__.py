"""The operator's command line (`export-center ...`): the service's entry point,
operator commands, provider-check and the acceptance run."""
