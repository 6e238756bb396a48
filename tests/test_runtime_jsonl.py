"""The stream-agnostic JSON-lines logic: framing, finiteness, output bounds, request encoding."""

from __future__ import annotations

import json

import pytest

from evalarc.runtime.jsonl import (
    CASE_BUDGET_EXHAUSTED,
    NOT_FINITE_JSON,
    OUTPUT_LIMIT_EXCEEDED,
    RESPONSE_TIMEOUT,
    ResponseReader,
    capped_deadline,
    describe_line,
    encode_request,
    exit_code_message,
    line_bytes,
    parse_response,
)
from evalarc.runtime.protocol import AgentFault


def test_request_is_ascii_escaped_and_newline_terminated() -> None:
    line = encode_request({"op": "put", "key": "ключ😀", "value": [1, 2.5, None]}, 8192)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert line.isascii()
    assert b"\\u043a" in line and b"\\ud83d\\ude00" in line
    assert json.loads(line) == {"op": "put", "key": "ключ😀", "value": [1, 2.5, None]}


def test_non_object_requests_are_sent() -> None:
    assert encode_request(None, 8192) == b"null\n"
    assert encode_request([], 8192) == b"[]\n"


def test_request_limit_counts_the_newline() -> None:
    exact = encode_request("x" * 8188, 8192)  # two quotes + 8188 + newline = 8191
    assert len(exact) == 8191
    assert len(encode_request("x" * 8189, 8192)) == 8192
    with pytest.raises(ValueError, match="8192"):
        encode_request("x" * 8190, 8192)


def test_request_with_nan_is_a_harness_bug() -> None:
    with pytest.raises(ValueError):
        encode_request({"value": float("nan")}, 8192)


@pytest.mark.parametrize("text", [
    b"NaN", b"Infinity", b"-Infinity", b'{"ok": NaN}', b"[1e999]", b"-1e400",
    b"not json", b"", b'{"ok":true', b'{"ok":true} {"ok":true}', b"\xff\xfe{}",
    b"[" * 100_000 + b"]" * 100_000, b"1" * 5000,
])
def test_non_finite_or_invalid_responses_are_agent_faults(text: bytes) -> None:
    with pytest.raises(AgentFault) as caught:
        parse_response(text)
    assert caught.value.message == NOT_FINITE_JSON


def test_finite_responses_parse_exactly() -> None:
    assert parse_response(b'{"ok":true,"value":1.0}\r') == {"ok": True, "value": 1.0}
    assert parse_response(b"  123456789012345678901234567890 ") == 123456789012345678901234567890
    assert parse_response(b"1e308") == 1e308
    assert parse_response('"é"'.encode()) == "é"
    assert parse_response(b'{"a":1,"a":2}') == {"a": 2}


def test_lines_split_at_first_newline_across_chunks() -> None:
    reader = ResponseReader(1000)
    reader.feed_stdout(b'{"ok":')
    assert reader.take_line() is None and not reader.has_line()
    reader.feed_stdout(b'true}\n{"ok":false}\ntrail')
    assert reader.has_line()
    assert reader.take_line() == b'{"ok":true}'
    assert reader.take_line() == b'{"ok":false}'
    assert reader.take_line() is None
    assert reader.pending_stdout() == b"trail"
    assert reader.has_unsolicited_stdout()
    reader.feed_stdout(b"\n")
    assert reader.take_line() == b"trail"
    assert reader.stdout_bytes == len(b'{"ok":true}\n{"ok":false}\ntrail\n')


def test_whitespace_leftover_is_not_unsolicited() -> None:
    reader = ResponseReader(1000)
    reader.feed_stdout(b'{"ok":true}\n \r\n\t ')
    assert reader.take_line() == b'{"ok":true}'
    assert not reader.has_unsolicited_stdout()
    reader.feed_stdout(b"x")
    assert reader.has_unsolicited_stdout()


def test_output_limit_counts_stdout_and_stderr_together() -> None:
    reader = ResponseReader(10)
    reader.feed_stdout(b"12345")
    reader.feed_stderr(b"12345")
    assert reader.output_bytes == 10
    with pytest.raises(AgentFault) as caught:
        reader.feed_stderr(b"x")
    assert caught.value.message == OUTPUT_LIMIT_EXCEEDED
    assert reader.output_bytes == 11


def test_single_oversized_stdout_chunk_trips_the_limit() -> None:
    reader = ResponseReader(100)
    with pytest.raises(AgentFault, match="output limit exceeded"):
        reader.feed_stdout(b"a" * 101)


def test_stderr_tail_keeps_only_the_last_bytes() -> None:
    reader = ResponseReader(10_000, stderr_tail_bytes=8)
    reader.feed_stderr(b"0123456789")
    assert reader.stderr_tail() == "23456789"
    reader.feed_stderr(b"ab")
    assert reader.stderr_tail() == "456789ab"
    reader.feed_stderr(b"\xff")
    assert reader.stderr_tail() == "56789ab\ufffd"
    assert reader.stderr_bytes == 13 and reader.stdout_bytes == 0


def test_capped_deadline_names_the_binding_budget() -> None:
    assert capped_deadline(100.0, 10.0, 200.0, RESPONSE_TIMEOUT) == (110.0, RESPONSE_TIMEOUT)
    assert capped_deadline(100.0, 10.0, 105.0, RESPONSE_TIMEOUT) == (105.0, CASE_BUDGET_EXHAUSTED)
    assert capped_deadline(100.0, 10.0, 110.0, RESPONSE_TIMEOUT)[1] == CASE_BUDGET_EXHAUSTED


def test_describe_line_round_trips_exact_bytes() -> None:
    assert describe_line(b'{"k":"\xc3\xa9"}') == {"line": '{"k":"é"}'}
    odd = b'{"k":"\xff"}'
    fields = describe_line(odd)
    assert fields["line"] == '{"k":"\ufffd"}' and "raw_b64" in fields
    assert line_bytes(fields) == odd
    assert line_bytes(describe_line(b"plain")) == b"plain"


def test_exit_code_message() -> None:
    assert exit_code_message(3) == "candidate exited with code 3"
    assert exit_code_message(-9) == "candidate exited with code -9"
