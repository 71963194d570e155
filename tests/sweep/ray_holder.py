"""A stand-in Ray cluster for the tests: start a Ray instance, print its address, keep it up until
stdin closes, then shut it down (with all its processes)."""

import sys

import ray

ctx = ray.init(num_cpus=int(sys.argv[1]) if len(sys.argv) > 1 else 2, include_dashboard=False)
print(ctx.address_info["gcs_address"], flush=True)
sys.stdin.read()
ray.shutdown()
