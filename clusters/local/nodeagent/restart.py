"""Restart policy and back-off: whether an exited container runs again, and how long it waits first.

Pure functions: no I/O, the clock is passed in. A crashed container waits 0 s, then 10 s, doubling up to
300 s; a run that lasted 600 s or more starts the count afresh. A failed image pull alternates between
ErrImagePull (retried after RETRY) and ImagePullBackOff (10 s * 2^(failures - 2), at most 300 s).
Also the Pod worker's own retry and resync periods.
"""
from __future__ import annotations

BACKOFF_INITIAL, BACKOFF_MAX, BACKOFF_RESET = 10.0, 300.0, 600.0
RETRY = 2.0  # a failed step (sandbox, mount, image pull, config, status patch) is tried again this much later
RESYNC = 10.0  # a Pod worker reconciles at least this often


def should_restart(kind: str, policy: str, exit_code: int, own_policy: str | None = None) -> bool:
    """Whether a container of this kind (init, sidecar, app) runs again under the Pod's restartPolicy, or for an
    app container under its own `restartPolicy` when it sets one (Kubernetes' container restart rules, beta and on
    from 1.35: only `restartPolicy` itself, not `restartPolicyRules`)."""
    if kind == "sidecar":
        return True
    if kind == "init":
        return policy != "Never" and exit_code != 0
    policy = own_policy or policy
    return policy == "Always" or (policy == "OnFailure" and exit_code != 0)


def crash_backoff(backoff: float, started_at: float, now: float) -> tuple[float, float]:
    """(delay before the next run, back-off to remember) for a run that started at started_at and ended now."""
    if now - started_at >= BACKOFF_RESET:
        backoff = 0.0
    return backoff, BACKOFF_INITIAL if backoff == 0 else min(backoff * 2, BACKOFF_MAX)


def image_pull_retry(failures: int, previous_reason: str | None) -> tuple[str, float]:
    """(waiting reason, delay before the next pull) after the failures-th failed pull in a row."""
    if previous_reason == "ErrImagePull":
        return "ImagePullBackOff", min(BACKOFF_INITIAL * 2 ** (failures - 2), BACKOFF_MAX)
    return "ErrImagePull", RETRY
