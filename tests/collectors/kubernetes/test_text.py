"""Objects of invalid text (not UTF-8, lone surrogate escapes) are cut out of their page."""

from __future__ import annotations

import json

import msgspec

from collectors.kubernetes.builder import read_page
from collectors.kubernetes.text import needs_split, split_page, text_problem
from collectors.kubernetes.watch import parse_event


def page(*items: bytes) -> bytes:
    return (
        b'{"metadata":{"resourceVersion":"7","continue":"c"},"items":[' + b",".join(items) + b"]}"
    )


GOOD = [json.dumps({"metadata": {"name": f"p{i}", "uid": f"u{i}"}}).encode() for i in range(3)]
LATIN1 = b'{"metadata":{"name":"j\xfcrgen","uid":"u-latin1"}}'
LONE = b'{"metadata":{"name":"x","uid":"u-lone","labels":{"a":"\\udc80"}}}'
PAIR = b'{"metadata":{"name":"emoji \\ud83d\\ude00","uid":"u-pair"}}'
ESCAPED = b'{"metadata":{"name":"literal \\\\udc80 text","uid":"u-esc"}}'


def test_clean_pages_are_left_alone():
    body = page(*GOOD, PAIR, ESCAPED, '{"metadata":{"name":"Zürich"}}'.encode())
    assert text_problem(PAIR) is None and text_problem(ESCAPED) is None
    head = read_page(body)
    assert head.rejected == [] and head.body is body and len(head.items) == 6


def test_invalid_utf8_and_lone_surrogates_are_rejected_and_the_rest_kept():
    body = page(GOOD[0], LATIN1, GOOD[1], LONE, GOOD[2])
    assert needs_split(body)
    read = read_page(body, resource="pods")
    assert [r.reason_code for r in read.rejected] == ["invalid_text", "invalid_text"]
    assert read.rejected[0].locator == "pods/item 1 of page"
    assert "not valid UTF-8" in read.rejected[0].message and "0xfc" in read.rejected[0].message
    assert "lone UTF-16 surrogate" in read.rejected[1].message
    assert read.rejected[0].raw == LATIN1 and read.rejected[1].raw == LONE
    names = [msgspec.json.decode(bytes(i))["metadata"]["name"] for i in read.items]
    assert names == ["p0", "p1", "p2"]
    assert read.metadata.continue_ == "c" and read.metadata.resource_version == "7"
    assert msgspec.json.decode(read.body)  # the rebuilt page is valid JSON text


def test_a_truncated_page_is_still_an_error_to_fetch_again():
    body = page(GOOD[0], LONE, GOOD[1])
    try:
        split_page(body[:-10], "pods")
    except msgspec.DecodeError:
        pass
    else:
        raise AssertionError("a truncated page must raise DecodeError")


def test_a_watch_event_of_invalid_text_moves_on_with_its_problem():
    line = (
        b'{"type":"MODIFIED","object":{"metadata":{"name":"x","uid":"u",'
        b'"resourceVersion":"42","labels":{"a":"\\udc80"}}}}'
    )
    event = parse_event(line)
    assert event.type == "MODIFIED" and event.resource_version == "42"
    assert event.problem is not None and "surrogate" in event.problem and event.raw == line
    clean = parse_event(
        b'{"type":"ADDED","object":{"metadata":{"name":"y","resourceVersion":"43"}}}'
    )
    assert clean.problem is None


def test_watch_mode_keeps_an_event_of_invalid_text_as_rejected():
    from collectors.kubernetes.history import _Buffer

    line = b'{"type":"ADDED","object":{"metadata":{"name":"j\xfcrgen","uid":"u",'
    line += b'"resourceVersion":"9"}}}'
    buffer = _Buffer()
    buffer.add(parse_event(line), 0.0)
    assert not buffer.by_uid and buffer.events == 1
    [rejection] = buffer.rejected
    assert rejection.reason_code == "invalid_text" and rejection.raw == line
    assert "resourceVersion 9" in rejection.locator
