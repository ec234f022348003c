"""pdsim: the embedded prefill/decode deployment that reproduces the seed's bugs mechanically.

Modules: config (serve file), prefill / decode (servers), transfer (bootstrap thread, sender,
receiver), hicache (pools, host pool, stack builder), datapath / indexer (rows and the model),
control (up/down/restart/status), repro (harness), logs (journal), clock (the simulated time
every process runs on: outcomes do not depend on the host's speed), stress (CPU and disk
stressors for showing it).
"""
