"""Flows across two emulated hosts, timed at the receiver (what the link delivered, not what the sender queued).

  link_flows.py serve ADDR PORT FLOWS      accept FLOWS connections, print one line per flow: tos bytes seconds
  link_flows.py send ADDR PORT TOS:BYTES:DELAY_S...   one connection per flow, started DELAY_S after the first
  link_flows.py echo ADDR PORT BYTES       answer each message of BYTES with one byte
  link_flows.py ping ADDR PORT BYTES N     N messages of BYTES, each after an idle gap; print the median
                                           seconds from sending a message to its answer
"""
import socket
import statistics
import sys
import threading
import time

TIMEOUT_S = 20


def serve(addr, port, flows):
    listener = socket.create_server((addr, port))
    listener.settimeout(TIMEOUT_S)
    results, threads = [], []

    def drain(conn):
        conn.settimeout(TIMEOUT_S)
        header = conn.recv(1)  # the flow's TOS byte, sent first
        start, total = time.monotonic(), 0
        while chunk := conn.recv(1 << 20):
            total += len(chunk)
        results.append((header[0], total, time.monotonic() - start))

    for _ in range(flows):
        conn, _ = listener.accept()
        threads.append(threading.Thread(target=drain, args=(conn,)))
        threads[-1].start()
    for t in threads:
        t.join()
    for tos, total, seconds in sorted(results):
        print(tos, total, f"{seconds:.4f}")


def send(addr, port, specs):
    def flow(tos, size, delay):
        time.sleep(delay)
        conn = socket.socket()
        conn.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
        conn.settimeout(TIMEOUT_S)
        conn.connect((addr, port))
        conn.sendall(bytes([tos]))
        block = b"\0" * (1 << 16)
        for _ in range(size // len(block)):
            conn.sendall(block)
        conn.close()

    threads = []
    for spec in specs:
        tos, size, delay = spec.split(":")
        threads.append(threading.Thread(target=flow, args=(int(tos, 0), int(size), float(delay))))
        threads[-1].start()
    for t in threads:
        t.join()


def echo(addr, port, size):
    listener = socket.create_server((addr, port))
    listener.settimeout(TIMEOUT_S)
    conn, _ = listener.accept()
    conn.settimeout(TIMEOUT_S)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while True:
        got = 0
        while got < size:
            chunk = conn.recv(1 << 20)
            if not chunk:
                return
            got += len(chunk)
        conn.sendall(b"k")


def ping(addr, port, size, count):
    conn = socket.create_connection((addr, port), timeout=TIMEOUT_S)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    message, times = b"\0" * size, []
    for _ in range(count):
        start = time.monotonic()
        conn.sendall(message)
        if conn.recv(1) != b"k":
            sys.exit("ping: the echo server closed the connection")
        times.append(time.monotonic() - start)
        time.sleep(0.02)  # idle long enough for the shaper to refill
    conn.close()
    print(f"{statistics.median(times[2:]):.6f}")


if __name__ == "__main__":
    mode, addr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "serve":
        serve(addr, port, int(sys.argv[4]))
    elif mode == "echo":
        echo(addr, port, int(sys.argv[4]))
    elif mode == "ping":
        ping(addr, port, int(sys.argv[4]), int(sys.argv[5]))
    else:
        send(addr, port, sys.argv[4:])
