"""Where a run's cluster comes from: cluster definitions (`definition.py`), the shared tool cache (`toolcache.py`),
the local test bed (`local/`), kind's offline engine and images (`kind/`) and the fake device plugin
for GPUs, TPUs or any extended resource (`deviceplugin/`). Nothing here imports the rest of the project."""
