"""What a one-line error on stderr looks like."""

def one_line_error(capsys, *parts):
    """The error is one line, the last on stderr (progress bars of datasets may precede
    it), with no traceback."""
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if "error:" in line]
    assert len(errors) == 1 and err[-1] == errors[0] and "Traceback" not in "\n".join(err), err
    for p in parts:
        assert p in errors[0], (p, errors[0])
    return errors[0]
