(** * Extents of reshaped terms, for [check_safe] (paper Sec. 7.2).

    [check_safe] (Rewrites/Safety.v) proves every access [v _[ i ]] in
    bounds, reading the extents of [v] from its syntax.  It leaves an
    extension point, the hint database [atl_dims], for operators defined
    after it; this file adds the reshape operators of Reshape/Defs.v, with
    the extents of Fig. 5:
    [concat n1 n2]: n1 + n2; [transpose n m]: m, n; [flatten n m]: n * m;
    [split k n]: cdiv n k, k; [pad_r k n], [pad_l k n]: n + k;
    [trunc_r k], [trunc_l k n]: k.  Inner extents are the operand's; when
    those are unknown only the outer ones are given. *)

From Coq Require Import ZArith List.
From Verisched Require Import Tensor.Core Rewrites.Safety.
From Verisched Require Import Reshape.Defs.
Import ListNotations.

(** The extents of [e] after the first [k] (1 or 2), or [nil]. *)
Ltac reshape_dims_after1 e :=
  match goal with
  | _ => let d := atl_dims e in lazymatch d with _ :: ?t => constr:(t) end
  | _ => constr:(@nil Z)
  end.

Ltac reshape_dims_after2 e :=
  match goal with
  | _ => let d := atl_dims e in lazymatch d with _ :: _ :: ?t => constr:(t) end
  | _ => constr:(@nil Z)
  end.

(** A concatenation's inner extents are its first operand's, or, when those are
    unknown (a [tzero] border, as in a buffer padded with zero rows), its second's. *)
Ltac reshape_dims_after1_either a b :=
  match goal with
  | _ => let d := atl_dims a in lazymatch d with _ :: ?t => constr:(t) end
  | _ => let d := atl_dims b in lazymatch d with _ :: ?t => constr:(t) end
  | _ => constr:(@nil Z)
  end.

#[global] Hint Extern 1 (atl_dims_of (concat ?n1 ?n2 ?a ?b)) =>
  let t := reshape_dims_after1_either a b in exact ((n1 + n2)%Z :: t) : atl_dims.
#[global] Hint Extern 1 (atl_dims_of (transpose ?n ?m ?e)) =>
  let t := reshape_dims_after2 e in exact (m :: n :: t) : atl_dims.
#[global] Hint Extern 1 (atl_dims_of (flatten ?n ?m ?e)) =>
  let t := reshape_dims_after2 e in exact ((n * m)%Z :: t) : atl_dims.
#[global] Hint Extern 1 (atl_dims_of (split ?k ?n ?e)) =>
  let t := reshape_dims_after1 e in exact (cdiv n k :: k :: t) : atl_dims.
#[global] Hint Extern 1 (atl_dims_of (pad_r ?k ?n ?e)) =>
  let t := reshape_dims_after1 e in exact ((n + k)%Z :: t) : atl_dims.
#[global] Hint Extern 1 (atl_dims_of (pad_l ?k ?n ?e)) =>
  let t := reshape_dims_after1 e in exact ((n + k)%Z :: t) : atl_dims.
#[global] Hint Extern 1 (atl_dims_of (trunc_r ?k ?e)) =>
  let t := reshape_dims_after1 e in exact (k :: t) : atl_dims.
#[global] Hint Extern 1 (atl_dims_of (trunc_l ?k _ ?e)) =>
  let t := reshape_dims_after1 e in exact (k :: t) : atl_dims.
