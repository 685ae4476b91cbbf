"""targets/blocking.py: cache sizes read from sysfs, and the GEMM block sizes of
BLIS's analytical model (Low et al. 2016) computed from them."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from verisched.targets import blocking
from verisched.targets.blocking import Cache, CacheSizes, gemm_blocks, kc_max, mc_max

ZEN = CacheSizes(Cache(32 * 1024, 8), Cache(1024 * 1024, 8), "test")


def _fake_sysfs(root: Path, entries: list[tuple[int, str, str, int]]) -> Path:
    for i, (level, kind, size, ways) in enumerate(entries):
        d = root / f"index{i}"
        d.mkdir(parents=True)
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
        (d / "ways_of_associativity").write_text(f"{ways}\n")
        (d / "coherency_line_size").write_text("64\n")
    return root


def test_sysfs_data_and_unified_levels_are_read(tmp_path: Path) -> None:
    root = _fake_sysfs(tmp_path, [(1, "Data", "48K", 12), (1, "Instruction", "32K", 8),
                                  (2, "Unified", "2048K", 16), (3, "Unified", "32M", 16)])
    got = blocking._from_sysfs(root)
    assert got is not None
    assert got.l1 == Cache(48 * 1024, 12) and got.l2 == Cache(2048 * 1024, 16)


def test_sysfs_without_an_l2_is_not_used(tmp_path: Path) -> None:
    root = _fake_sysfs(tmp_path, [(1, "Data", "32K", 8)])
    assert blocking._from_sysfs(root) is None


def test_this_machine_has_readable_figures() -> None:
    c = blocking.cache_sizes()
    assert c.l1.size >= 4096 and c.l2.size > c.l1.size, c.describe()


def test_the_model_on_a_zen_core() -> None:
    # 32 KiB 8-way L1 (64 sets): a 6 x 16 tile leaves the A micro-panel one way and
    # the C tile one, so the B micro-panel gets 6 ways = 24 KiB = 384 rows of 16 floats.
    assert kc_max(16, caches=ZEN) == 384
    # 6 x 64 (AVX-512): still one way for A, 24 KiB of 64 floats per row = 96 steps,
    # under the floor: the micro-panel goes to one 128 KiB way of L2 instead, 512 steps.
    assert kc_max(64, caches=ZEN) == 512
    # 1 MiB 8-way L2 (128 KiB ways): B's micro-panel takes one way, C one, A six.
    assert mc_max(384, 16, caches=ZEN) == 6 * 128 * 1024 // (384 * 4) // 6 * 6


@given(M=st.integers(1, 5000), K=st.integers(1, 5000), threads=st.integers(1, 16),
       nr=st.sampled_from([8, 16, 32, 64]))
def test_blocks_cover_the_problem_evenly(M: int, K: int, threads: int, nr: int) -> None:
    b = gemm_blocks(M, K, threads, nr=nr, caches=ZEN)
    kmax = kc_max(nr, caches=ZEN)
    assert 1 <= b["kc"] <= kmax
    depth_blocks = -(-K // b["kc"])
    assert depth_blocks == -(-K // kmax)          # as few depth blocks as the cache allows
    assert depth_blocks * b["kc"] - K < depth_blocks  # nearly equal: padding < one per block
    rows, panels = 6 * b["mcr"], -(-M // 6)
    mcr_max = mc_max(kmax, nr, caches=ZEN) // 6
    if panels <= mcr_max:
        assert b["mcr"] == panels                   # one row block
    else:
        assert b["mcr"] <= mcr_max                  # each block fits L2
        planned = threads * -(-panels // (threads * mcr_max))
        assert -(-M // rows) <= planned             # a multiple of the thread count
        assert planned * b["mcr"] - panels < planned  # nearly equal sizes


@given(M=st.integers(1, 5000), N=st.integers(1, 5000), K=st.integers(1, 3000),
       threads=st.integers(1, 16), nr=st.sampled_from([8, 16, 32, 64]))
def test_a_row_block_per_thread_unless_wide(M: int, N: int, K: int, threads: int,
                                            nr: int) -> None:
    """Where all of M fits one L2 block, each thread gets a row block of its own (nearly
    equal ones), unless the problem is over ROW_BLOCKS_MAX_WIDTH times wider than tall,
    where one row block's strips are shared (#109).  Where M does not fit, N changes
    nothing."""
    b = gemm_blocks(M, K, threads, nr=nr, caches=ZEN, N=N)
    unknown = gemm_blocks(M, K, threads, nr=nr, caches=ZEN)
    assert b["kc"] == unknown["kc"]
    panels = -(-M // 6)
    if panels > mc_max(kc_max(nr, caches=ZEN), nr, caches=ZEN) // 6:
        assert b == unknown
    elif threads == 1 or N > blocking.ROW_BLOCKS_MAX_WIDTH * M:
        assert b["mcr"] == panels
    else:
        blocks = -(-panels // b["mcr"])
        if blocks == 1:  # too few panels to give every thread one
            assert b["mcr"] == panels and -(-panels // -(-panels // threads)) < threads
        else:
            assert blocks == threads and blocks * b["mcr"] - panels < blocks
