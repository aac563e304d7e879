"""Handles on one Ray resource of a test (`ctx.raycluster(name)`, `ctx.rayjob(name)`, `ctx.rayservice(name)`,
`ctx.raycronjob(name)`): reading it, changing it, and its `must_*` methods, which wait for what must hold through
`testing.expect` and fail naming the expected and the observed state. A method's timeout defaults to its operation's
(`testing.waiting.Timeouts`); a test passes another only where the behavior says how long it may take."""
