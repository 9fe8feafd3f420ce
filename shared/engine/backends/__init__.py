"""Judge backends, one module per wire protocol, each implementing :class:`.base.Backend`;
:mod:`.registry`, the providers (one entry each: backend class, capabilities, defaults, prices);
:mod:`.pool`, the per-process pool that builds a configuration's backend
(:func:`.pool.make_backend`).

This package's own module imports nothing: :mod:`shared.engine.config` reads the registry, and
Python runs this file first, so anything here that needed the configuration would close a loop.
"""
