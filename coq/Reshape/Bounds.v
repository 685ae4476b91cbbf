(** * Extents of reshaped terms, for [check_safe] (paper Sec. 7.2).

    [check_safe] (Rewrites/Safety.v) proves every access [v _[ i ]] in
    bounds, reading the extents of [v] from its syntax.  It leaves an
    extension point, [atl_dims_ext], for operators defined after it; this
    file redefines it for the reshape operators of Reshape/Defs.v, using
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

Ltac atl_dims_ext v ::=
  lazymatch v with
  | concat ?n1 ?n2 ?a _ => let t := reshape_dims_after1 a in constr:((n1 + n2)%Z :: t)
  | transpose ?n ?m ?e => let t := reshape_dims_after2 e in constr:(m :: n :: t)
  | flatten ?n ?m ?e => let t := reshape_dims_after2 e in constr:((n * m)%Z :: t)
  | split ?k ?n ?e => let t := reshape_dims_after1 e in constr:(cdiv n k :: k :: t)
  | pad_r ?k ?n ?e => let t := reshape_dims_after1 e in constr:((n + k)%Z :: t)
  | pad_l ?k ?n ?e => let t := reshape_dims_after1 e in constr:((n + k)%Z :: t)
  | trunc_r ?k ?e => let t := reshape_dims_after1 e in constr:(k :: t)
  | trunc_l ?k _ ?e => let t := reshape_dims_after1 e in constr:(k :: t)
  end.
