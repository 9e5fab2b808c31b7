"""Attacks a manager's probe port on this machine (loopback only, bounded in time) and counts
the probes that fail: 300 silent connections, each re-opened when the server closes it, and
PIPELINERS clients that pipeline requests and never read the answers (re-connecting when cut),
while `curl -m1 /healthz` runs every 100 ms. docs/security.md has the numbers.

    python3 hack/probe-attack.py PORT SECONDS PIPELINERS
"""
import socket, subprocess, sys, threading, time
port = int(sys.argv[1]); duration = float(sys.argv[2]); pipeliners = int(sys.argv[3])
url = f"http://127.0.0.1:{port}/healthz"
stop = time.time() + duration
results = []
def prober():
    while time.time() < stop:
        t = time.time()
        r = subprocess.run(["curl", "-m1", "-s", "-o", "/dev/null", "-w", "%{http_code}", url], capture_output=True, text=True)
        results.append(r.stdout.strip())
        time.sleep(max(0, 0.1 - (time.time() - t)))
lifetimes = []
def pipeliner():
    req = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" * 256
    while time.time() < stop:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        s.settimeout(max(0.1, stop - time.time()))
        t = time.time()
        try:
            s.connect(("127.0.0.1", port))
            while time.time() < stop:
                s.sendall(req)
        except socket.timeout:
            lifetimes.append(("held until the end", round(time.time() - t, 1))); s.close(); return
        except OSError:
            lifetimes.append(("cut", round(time.time() - t, 1)))
            s.close()
            continue
        # Still being answered when the run ended (the kernel buffers megabytes of answers).
        lifetimes.append(("still sending at the end", round(time.time() - t, 1)))
        s.close()
threads = [threading.Thread(target=prober)] + [threading.Thread(target=pipeliner) for _ in range(pipeliners)]
for th in threads: th.start()
idle = []; reopened = 0
def connect():
    s = socket.socket(); s.connect(("127.0.0.1", port)); s.setblocking(False); return s
for _ in range(300): idle.append(connect())
while time.time() < stop:
    for i, s in enumerate(idle):
        try:
            if s.recv(1, socket.MSG_PEEK) == b"":
                raise ConnectionResetError
        except BlockingIOError:
            continue
        except OSError:
            pass
        s.close(); idle[i] = connect(); reopened += 1
    time.sleep(0.2)
for th in threads: th.join()
for s in idle: s.close()
failed = sum(1 for r in results if r != "200")
print(f"probes={len(results)} failed={failed} idle_reopened={reopened} pipeliner_connections={lifetimes}")
