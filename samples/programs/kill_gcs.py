"""Run on the head: kills the head's GCS server process (`KILLING <pid>`)."""
import os, signal
for pid in [p for p in os.listdir('/proc') if p.isdigit()]:
    try:
        comm = open('/proc/' + pid + '/comm').read().strip()
    except OSError:
        continue
    if comm == 'gcs_server':
        print('KILLING', pid, flush=True)
        os.kill(int(pid), signal.SIGKILL)
