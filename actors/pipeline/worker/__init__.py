"""The export worker process: its protocol, its main loop and session, and the service's
handle on it and pool of spare workers."""
