"""Run on a head: sends `sig` (e.g. SIGKILL, SIGSTOP) to every process of the head's Ray container named `name`:
its program (gcs_server) or the title Ray gives a worker process (ray::ProxyActor). With `for_s`, it goes on doing
so every half second for that long, so a process Ray starts again meanwhile gets the signal too. Prints
`SIGNALLED <pid> <argv0>` for each."""
import os, signal, time

name = 'gcs_server'  # parameter
sig = 'SIGKILL'  # parameter
for_s = 0  # parameter

end = time.time() + for_s
while True:
    for pid in [p for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()]:
        try:
            argv0 = open('/proc/' + pid + '/cmdline', 'rb').read().split(bytes(1))[0].decode(errors='replace')
            comm = open('/proc/' + pid + '/comm').read().strip()
        except OSError:
            continue
        if comm == name or os.path.basename(argv0).startswith(name):
            os.kill(int(pid), getattr(signal, sig))
            print('SIGNALLED', pid, argv0, flush=True)
    if time.time() >= end:
        break
    time.sleep(0.5)
