"""``services.admission.PendingPool``: per-client share, eviction of the oldest, deadlines."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from services.admission import PendingPool, client_of


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def pairs() -> Iterator[list[tuple[socket.socket, socket.socket]]]:
    made = [socket.socketpair() for _ in range(8)]
    yield made
    for left, right in made:
        left.close()
        right.close()


def is_cut(sock: socket.socket) -> bool:
    sock.settimeout(0.5)
    try:
        return sock.recv(1) == b""  # our own end shut down for reading: EOF at once
    except TimeoutError:
        return False


def test_one_client_gets_its_share_and_no_more(pairs: list) -> None:
    pool = PendingPool(capacity=10, per_client=2, timeout=5, clock=Clock())
    assert pool.admit(pairs[0][0], "10.0.0.1") == 105.0
    assert pool.admit(pairs[1][0], "10.0.0.1") is not None
    assert pool.admit(pairs[2][0], "10.0.0.1") is None  # refused at accept
    assert pool.admit(pairs[3][0], "10.0.0.2") is not None  # another client is not affected
    pool.leave(pairs[0][0])
    assert pool.admit(pairs[4][0], "10.0.0.1") is not None  # a share comes back on leave
    assert (len(pool), pool.refused) == (3, 1)


def test_a_full_pool_cuts_the_connection_pending_longest(pairs: list) -> None:
    clock = Clock()
    pool = PendingPool(capacity=2, per_client=10, timeout=5, clock=clock)
    pool.admit(pairs[0][0], "a")
    clock.now += 1
    pool.admit(pairs[1][0], "b")
    pool.admit(pairs[2][0], "c")
    assert is_cut(pairs[0][0]) and not is_cut(pairs[1][0])
    assert (len(pool), pool.evicted) == (2, 1)
    pool.admit(pairs[0][1], "a")  # the evicted one's client share came back
    assert is_cut(pairs[1][0])


def test_deadlines_cut_pending_connections_and_only_those(pairs: list) -> None:
    clock = Clock()
    pool = PendingPool(capacity=10, per_client=10, timeout=5, clock=clock, grace=0.5)
    pool.admit(pairs[0][0], "a")
    clock.now += 3
    pool.admit(pairs[1][0], "a")
    pool.admit(pairs[2][0], "b")
    pool.leave(pairs[2][0])  # authenticated: no longer pending, never cut
    clock.now += 2.2
    assert pool.reap_once() == 0  # past its deadline, within the grace left to its thread
    clock.now += 0.5
    assert pool.reap_once() == 1
    assert is_cut(pairs[0][0]) and not is_cut(pairs[1][0]) and not is_cut(pairs[2][0])
    clock.now += 10
    assert pool.reap_once() == 1 and len(pool) == 0 and pool.expired == 2
    assert not is_cut(pairs[2][0])


def test_cutting_a_closed_socket_is_harmless(pairs: list) -> None:
    clock = Clock()
    pool = PendingPool(capacity=1, per_client=10, timeout=1, clock=clock, grace=0)
    pool.admit(pairs[0][0], "a")
    pairs[0][0].close()  # its thread closed it between the deadline and the reaper
    clock.now += 2
    assert pool.reap_once() == 1


def test_clients_are_ipv4_addresses_and_ipv6_slash_64s() -> None:
    assert client_of("10.0.0.7") == "10.0.0.7"
    assert client_of("::ffff:10.0.0.7") == "10.0.0.7"
    assert client_of("2001:db8:1:2::1") == client_of("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert client_of("2001:db8:1:3::1") != client_of("2001:db8:1:2::1")
    assert client_of("fe80::1%eth0") == "fe80::/64"
