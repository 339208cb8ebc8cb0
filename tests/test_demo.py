"""The offline demonstration runs on embedded data only and gives sane tables."""
import numpy as np

from dpstack.demo import digits_table, main, transfer_table


def test_digits_table_non_private_is_near_perfect():
    table = digits_table(epsilons=(np.inf,), n_repeats=1)
    assert list(table.index) == ["PLR", "PST-F(U)", "PST-S"]
    assert (table[np.inf] > 0.95).all()  # 0 vs 8 is easy without noise


def test_transfer_table_has_every_method():
    table = transfer_table()
    assert len(table) == 4
    assert table.auc.between(0.5, 1.0).all()


def test_main_writes_the_figure(tmp_path, capsys, monkeypatch):
    import dpstack.demo as demo

    monkeypatch.setattr(demo, "digits_table", lambda: digits_table(epsilons=(0.5, 1.0, 4.0, np.inf), n_repeats=1))
    main(["--out", str(tmp_path)])
    assert (tmp_path / "demo_digits_auc.png").stat().st_size > 1000
    assert "PPTL-FS(W)" in capsys.readouterr().out
