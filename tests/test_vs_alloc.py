"""The generated C's heap buffers (helpers.c.j2's `vs_alloc` and `vs_free`): every one
starts on a 64-byte line, zeroed ones are zero over all their elements, each is released
by `vs_free` without a leak or a bad free (ASan), and a count too large for the address
space is refused (NULL), never wrapped into a short buffer.

Why alignment is asserted: packed SGEMM panels are read with 512-bit loads; from
malloc's 16-byte alignment a load could span two cache lines, and the 2-thread
kernel ran 15% slower (decision #110)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from verisched.codegen.render import c_helpers
from verisched.targets.toolchain import compiler

PROGRAM = r"""
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
%s
int main(void) {
  int bad = 0, nkept = 0;
  static void *kept[1000];
  const int64_t counts[] = {0, 1, 3, 15, 16, 17, 1000, 32767, 65536, 262147};
  for (int r = 0; r < 50; ++r) {          /* many live buffers: offsets vary */
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c) {
      for (int z = 0; z <= 1; ++z) {
        size_t size = (c %% 2) ? sizeof(float) : sizeof(double);
        unsigned char *p = vs_alloc(counts[c], size, z);
        if (p == NULL) { printf("null %%lld\n", (long long)counts[c]); bad = 1; continue; }
        if ((uintptr_t)p %% 64 != 0) { printf("misaligned %%p\n", (void *)p); bad = 1; }
        size_t bytes = ((size_t)counts[c] + 1) * size;
        for (size_t i = 0; z && i < bytes; ++i)
          if (p[i]) { printf("not zero\n"); bad = 1; break; }
        memset(p, 0xab, bytes);                /* the whole buffer is writable */
        if (r %% 3) vs_free(p);               /* some kept, so later ones land elsewhere */
        else kept[nkept++] = p;
      }
    }
  }
  if (vs_alloc(VS_BAD, sizeof(float), 0) != NULL) { printf("VS_BAD allocated\n"); bad = 1; }
  if (vs_alloc(-1, sizeof(float), 1) != NULL) { printf("-1 allocated\n"); bad = 1; }
  if (vs_alloc(PTRDIFF_MAX / 4, sizeof(float), 0) != NULL) { printf("huge\n"); bad = 1; }
  if (vs_alloc(INT64_MAX - 1, sizeof(double), 1) != NULL) { printf("wrap\n"); bad = 1; }
  while (nkept > 0) vs_free(kept[--nkept]);
  vs_free(NULL);
  puts(bad ? "FAIL" : "OK");
  return bad;
}
"""


def test_vs_alloc_is_line_aligned_zeroed_and_refuses_huge_counts(tmp_path: Path) -> None:
    src = tmp_path / "alloc.c"
    src.write_text(PROGRAM % c_helpers())
    exe = tmp_path / "alloc"
    subprocess.run([*compiler(), "-std=c11", "-O1", "-fsanitize=address,undefined",
                    "-fno-sanitize-recover=all", str(src), "-o", str(exe)], check=True)
    got = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert got.returncode == 0 and got.stdout.strip().endswith("OK"), got.stdout + got.stderr
