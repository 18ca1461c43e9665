"""The built-in demo Provider for export type ``CUSTOMER_LIST`` (§10.1, §10.2): a second
service, served in the same process in embedded mode.

It serves a synthetic customer table with ids ``1..rowCount`` over the real Provider
contract, so the embedded mode exercises the whole pipeline over HTTP, as production does. Every
value is a pure function of the customer id: no randomness, no clock, so two runs of a demo
produce the same file.

The data is built to keep the writer's guards busy on every demo (§11): customers 1..6
carry formula-like strings (leading ``= + - @ Tab CR``) in ``tenantName`` and ``remark``,
customer 7 has a 40,000-character remark (over Excel's 32,767 cell limit), ``lastOrderAt``
and ``remark`` are ``null`` on some rows, and the columns cover all six types.

Snapshot (§10.2): the token is the signed maximum id, ``v1.<maxId>.<hex HMAC-SHA256>``,
bound to the tenant and access domain; it excludes rows added after the first batch, and
nothing more (modifications and deletions are not frozen).

``data``: the synthetic customers, their columns and the snapshot tokens, the registry
entry; ``app``: the Provider's HTTP side (the batch endpoint, its checks, serving it).
"""
