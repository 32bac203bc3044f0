"""The one mapping of OS errors to tool errors: every action has a class and a message, ENOENT can be "missing"."""

from __future__ import annotations

import errno
import os
from typing import get_args

import pytest

from mcp_codetools.errors import (
    OS_FAILURES,
    ExecutionError,
    FileMissingError,
    NotAFileError,
    OsAction,
    ToolError,
    os_errors,
    tool_error_from_os,
)


def os_error(code: int) -> OSError:
    return OSError(code, os.strerror(code))


def test_every_action_is_mapped() -> None:
    assert set(get_args(OsAction)) == set(OS_FAILURES)


@pytest.mark.parametrize("action", get_args(OsAction))
def test_each_action_names_the_target_and_the_reason(action: OsAction) -> None:
    error = tool_error_from_os(os_error(errno.EACCES), action, "/ws/f.txt")
    assert type(error) is OS_FAILURES[action][0]
    assert "/ws/f.txt" in error.message and os.strerror(errno.EACCES) in error.message


def test_reading_side_failures_are_not_a_file_and_doing_side_failures_are_execution_errors() -> None:
    eio = os_error(errno.EIO)
    assert isinstance(tool_error_from_os(eio, "open", "f"), NotAFileError)
    assert isinstance(tool_error_from_os(eio, "search", "f"), NotAFileError)
    assert isinstance(tool_error_from_os(eio, "read", "f"), ExecutionError)
    assert isinstance(tool_error_from_os(eio, "write", "f"), ExecutionError)
    assert (
        tool_error_from_os(eio, "write", "f").message
        == f"Cannot write f: {os.strerror(errno.EIO)}. The file was left unchanged."
    )


def test_a_missing_file_is_file_not_found_only_where_the_caller_words_it() -> None:
    gone = FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))
    worded = tool_error_from_os(gone, "open", "f", missing="File does not exist: f")
    assert isinstance(worded, FileMissingError) and worded.message == "File does not exist: f"
    assert isinstance(tool_error_from_os(gone, "open", "f"), NotAFileError)
    assert isinstance(tool_error_from_os(os_error(errno.EACCES), "open", "f", missing="x"), NotAFileError)


def test_an_error_without_strerror_still_says_something() -> None:
    assert tool_error_from_os(OSError("bare"), "start", "the command").message == "Could not start the command: bare."


def test_the_block_translates_os_errors_and_lets_everything_else_through() -> None:
    with pytest.raises(NotAFileError) as caught, os_errors("open", "f"):
        raise os_error(errno.ELOOP)
    assert isinstance(caught.value.__cause__, OSError), "the OS error stays in the chain for the log"
    with pytest.raises(ToolError), os_errors("open", "f"):
        raise FileMissingError("already a tool error")
    with pytest.raises(ValueError), os_errors("open", "f"):
        raise ValueError("not an OS error")
    with os_errors("open", "f"):
        pass
