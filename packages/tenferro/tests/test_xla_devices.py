"""The XLA backend on several devices: four host devices stand in for accelerators
(``XLA_FLAGS=--xla_force_host_platform_device_count=4``, in a subprocess, since XLA
reads the flag once per process).

* Data parallelism: a ``vmap``-batched gradient whose batch axis is sharded over the
  four devices (``NamedSharding``) gives the one-device values, its result keeps the
  batch sharding, and every device holds a quarter of it.
* Residency: an array committed to device 2 gives results on device 2, and the
  captured data of a ``jit`` follows it there (embedded when small, placed there
  when large); one jitted function called with arrays
  on changing devices and shardings gives each result where its input is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("jax")

SCRIPT = textwrap.dedent(
    """
    import json
    import numpy as np
    import jax, jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    import tenferro as tf

    devices = jax.devices()
    rng = np.random.default_rng(0)
    weights = rng.standard_normal((6, 3))

    def loss(w, x):
        h = tf.tanh(x @ w)
        return tf.sum(h * h) + tf.sum(tf.linalg.svdvals(w))

    per_example = tf.jit(tf.vmap(tf.grad(loss), in_axes=(None, 0)), backend="xla")
    batch = rng.standard_normal((8, 5, 6))
    one_device = np.asarray(per_example(weights, batch))

    mesh = Mesh(np.array(devices), ("batch",))
    with jax.enable_x64(True):
        sharded = jax.device_put(batch, NamedSharding(mesh, P("batch")))
        replicated = jax.device_put(weights, NamedSharding(mesh, P()))
    out = per_example(replicated, sharded)
    report = {
        "devices": len(devices),
        "type": type(out).__name__,
        "max_difference": float(np.max(np.abs(np.asarray(out) - one_device))),
        "scale": float(np.max(np.abs(one_device))),
        "spec": [str(axis) for axis in out.sharding.spec],
        "shard_shapes": sorted({tuple(s.data.shape) for s in out.addressable_shards}),
        "shard_devices": sorted(s.device.id for s in out.addressable_shards),
    }

    captured = rng.standard_normal(4)
    with jax.enable_x64(True):
        on_two = jax.device_put(jnp.asarray(rng.standard_normal(4)), devices[2])
    moved = tf.jit(lambda x: tf.sin(x) * captured, backend="xla")(on_two)
    report["residency"] = [d.id for d in moved.devices()]
    big = rng.standard_normal(20_000)  # past the size embedded as a constant: passed
    moved_big = tf.jit(lambda x: tf.sin(x) * tf.sum(big * tf.sum(x)), backend="xla")(on_two)
    report["big_residency"] = [d.id for d in moved_big.devices()]
    host = np.asarray(on_two)
    report["big_value"] = float(
        np.max(np.abs(np.asarray(moved_big) - np.sin(host) * np.sum(big * np.sum(host))))
        / np.max(np.abs(np.asarray(moved_big)))
    )
    report["residency_value"] = float(
        np.max(np.abs(np.asarray(moved) - np.sin(np.asarray(on_two)) * captured))
    )

    # one function called with arrays on changing devices and shardings: its steady-state
    # lane (keyed by shapes and dtypes) hands each to an executable compiled for it
    moves = tf.jit(lambda x: tf.sin(x) * captured, backend="xla")
    homes, errors = [], []
    with jax.enable_x64(True):
        placed = [jax.device_put(jnp.asarray(rng.standard_normal(4)), devices[d])
                  for d in (2, 0, 2, 1, 1)]
        placed.append(jax.device_put(jnp.asarray(rng.standard_normal(4)),
                                     NamedSharding(mesh, P("batch"))))
    for x in placed:
        y = moves(x)
        homes.append(sorted(d.id for d in y.devices()))
        errors.append(float(np.max(np.abs(np.asarray(y) - np.sin(np.asarray(x)) * captured))))
    report["lane_homes"] = homes
    report["lane_error"] = max(errors)
    report["lane_sharded_spec"] = [str(axis) for axis in y.sharding.spec]
    print(json.dumps(report))
    """
)


def test_sharded_vmapped_gradient_matches_one_device_and_stays_where_it_is():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4")
    env["JAX_PLATFORMS"] = "cpu"
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["devices"] == 4
    assert report["type"] == "ArrayImpl"
    assert report["max_difference"] <= 1e-12 * max(1.0, report["scale"])
    assert report["spec"][:1] == ["batch"]  # the batch axis stays sharded
    assert report["shard_shapes"] == [[2, 6, 3]]  # a quarter of the batch on each device
    assert report["shard_devices"] == [0, 1, 2, 3]
    assert report["residency"] == [2]
    assert report["big_residency"] == [2]
    assert report["big_value"] <= 1e-12
    assert report["residency_value"] <= 1e-15
    assert report["lane_homes"] == [[2], [0], [2], [1], [1], [0, 1, 2, 3]]
    assert report["lane_error"] <= 1e-15
    assert report["lane_sharded_spec"] == ["batch"]
