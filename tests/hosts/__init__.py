"""Test hosts: Linux network namespaces on a bridge, links the tests cut and heal, a proxy
for latency, and a checker of the invariants after each partition.

* :mod:`tests.hosts.netns` makes the hosts (a namespace each, its own address, a veth
  to one bridge; no route out of the bridge: only loopback and the namespaces the suite
  made) and removes every one of them, also when a test fails.
* :mod:`tests.hosts.firewall` cuts and heals a host's links with nftables (one direction
  or both, one port or all, random loss), inside the host's namespace.
* :mod:`tests.hosts.toxiproxy` runs Toxiproxy (latency needs a userspace proxy: this
  kernel has no ``tc`` queueing disciplines) and sets its toxics.
* :mod:`tests.hosts.cluster` puts the service's instances on their hosts, each reaching
  MariaDB, the RocketMQ broker and the S3 server of the infrastructure host (the root
  namespace) across its link.
* :mod:`tests.hosts.checker` reads the database and the bucket and says what breaks an
  invariant.

Needs root (``ip netns``, ``nft``), as the test command runs here.
"""
