"""python -m dpstack.datasets: status and fetch never fail silently."""

from dpstack.datasets.__main__ import main


def test_status_lists_every_dataset(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DPSTACK_DATA", str(tmp_path))
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    assert str(tmp_path) in out
    for name in ("mnist", "news20", "har", "kddcup99", "url"):
        assert name in out
    assert "0/4 files present" in out  # mnist: nothing there yet
    assert "plain-http mirrors (8;" in out and "http://kdd.ics.uci.edu/databases/kddcup99/corrected.gz" in out


def test_fetch_failure_is_reported(tmp_path, monkeypatch, capsys):
    import dpstack.datasets.__main__ as cli

    def offline(name):
        raise ConnectionError(f"could not download {name} (offline?)")

    monkeypatch.setenv("DPSTACK_DATA", str(tmp_path))
    monkeypatch.setattr(cli, "fetch", offline)
    assert main(["fetch", "mnist"]) == 1
    assert main(["fetch", "mnist", "--missing-ok"]) == 0
    assert "could not fetch (ConnectionError" in capsys.readouterr().err
