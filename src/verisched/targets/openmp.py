"""The `openmp` target: C11 plus `#pragma omp parallel for` on provably safe loops.

The rule (implemented in codegen/generation.py and codegen/parallel.py): a loop is
parallel only if
1. it comes from a generation (GEN), never from a summation: iterations of
   a SUM accumulate into the same storage;
2. it is not nested in another parallel loop nor in any SUM loop (no nested
   parallel regions, no fork/join inside a serial reduction; but see 6), and it is the
   outermost generation of its nest that may run more than one iteration (a
   peeled border row is a one-iteration loop: its inner loop is parallel);
3. its iterations write disjoint storage.  This holds for every GEN loop by
   construction: the store index of iteration k is the destination's index
   function applied to k, and every index function the lowering builds
   (identity, concat offsets, transpose, flatten `j*m+k` with k clipped to
   [0,m), split `(t/k, t%k)`, pad/trunc shifts) is injective on the windows
   it is used with, and windows are always clipped to extents;
4. no temporary is shared: scalar temporaries, accumulators and let buffers
   are declared inside the loop body (private to each iteration); buffers
   declared outside are only read, except the destination itself.
5. a parallel loop whose body is exactly one generation loop, with bounds
   free of the outer variable and a body that itself contains loops (a row
   of tiles over its columns of tiles), is `collapse(2)`d with it
   (`parallel.collapse_tiles`): by 3 applied to both loops, two distinct
   pairs of iterations write disjoint storage (different outer iterations
   by the outer loop's injectivity, same outer iteration by the inner
   one's), and by 4 each pair's temporaries are private.  It spreads a
   row of tiles, even a single partial one, over the threads; the
   innermost loops are never collapsed, so they stay vectorisable.
6. a fallback: inside a parallel loop and under a SUM, the first generation on
   each path is parallel too, but runs so only when the parallel loop does not
   (`parallel.only_if_several`): that loop is emitted twice, a parallel copy
   taken with two or more iterations and at least as many as threads
   (`omp_get_max_threads()`), in which the fallbacks are serial, and a serial
   copy, in which they are parallel.  A parallel loop with fewer iterations
   than threads (a wide GEMM's single row block, or 2 row blocks for 4
   threads, known only at run time) thus hands the threads to its column
   strips.  Which copy runs changes the speed only, never the result.  Safe by 3 and 4 for the
   fallback loop itself (its iterations write disjoint slices of what the
   SUM accumulates into, and lets inside it are per iteration); the SUM's
   steps stay in order, each a fork/join.
7. a parallel loop whose iterations are each a few straight-line statements (no
   inner loop of more than one iteration, no block copy: a stencil's border row or
   column, an elementwise map) forks only from `parallel.PARALLEL_MIN_TRIPS`
   iterations on (an OpenMP `if` clause, `parallel.if_enough_work`), and not at all
   where its count is known to be smaller: with fewer iterations the fork and join
   cost more than the work.  The iterations and their results are the same either way.
   A fallback loop of rule 6 with a light body is held to the same
   (`parallel.serial_light_fallback`): it forks at every step of the SUM around it, so
   a parallel dot product whose chunks were fewer than the threads forked 512 times a
   call to share two vector statements (decision #149).
8. a concat of two generations that would each be a parallel loop by 2, the second
   one's range starting where the first one's ends (`concat q r (GEN [i < q] A)
   (GENR [q <= i < q + r] B)`: full tiles, then the partial ones), is one parallel
   loop over [0, q + r) that runs A below q and B from there on
   (`generation.lower_concat_gens`): one region where there were two, and one static
   split of all the iterations.  Safe by 3 (the concat's two parts write disjoint
   parts of its destination, and within each part the iterations do) and 4.
Anything else (zero-fill loops, other loops under a SUM, inner loops) stays serial.
"""

from __future__ import annotations

from verisched.targets.native import NativeTarget

TARGET = NativeTarget(name="openmp", summary="C11 with OpenMP parallel loops where provably safe",
                      parallel=True, extra_flags=("-fopenmp",))
