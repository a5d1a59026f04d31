"""UDP datagrams at a set rate and ECN codepoint, and the receiver's count of what arrived and how much of it was
marked CE: what the emulated switch's test drives through it. Bounded in time on both ends.
  udp_blast.py send ADDR PORT MBIT SECONDS TOS    prints: sent N
  udp_blast.py recv ADDR PORT                     prints: got N bytes B ce C mbit R (after 0.5 s of silence)"""
import socket
import sys
import time

PAYLOAD = 8000


def send(addr, port, mbit, seconds, tos):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
    gap = PAYLOAD * 8 / (mbit * 1e6)
    start = time.monotonic()
    sent = 0
    while time.monotonic() - start < seconds:
        due = start + sent * gap
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        try:
            s.sendto(b"x" * PAYLOAD, (addr, port))
        except OSError:
            pass  # a full socket buffer: the datagram is lost, as on a wire
        sent += 1
    print(f"sent {sent}")


def recv(addr, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, port))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
    s.settimeout(10.0)  # the sender starts within it
    count = size = marked = 0
    first = last = time.monotonic()
    while True:
        try:
            data, ancillary, _, _ = s.recvmsg(65536, 64)
        except socket.timeout:
            break
        s.settimeout(0.5)  # the switch drains its 300 KB in 24 ms; a stall of it is 50 ms
        last = time.monotonic()
        if count == 0:
            first = last
        count += 1
        size += len(data)
        marked += any(kind == socket.IP_TOS and value[0] & 3 == 3 for _, kind, value in ancillary)
    seconds = max(last - first, 1e-9)
    print(f"got {count} bytes {size} ce {marked} mbit {size * 8 / seconds / 1e6:.1f}")


if __name__ == "__main__":
    if sys.argv[1] == "send":
        send(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6], 0))
    else:
        recv(sys.argv[2], int(sys.argv[3]))
