(** The library in one import, generic over the scalar type: language,
    shapes, rewrites, tactics and targets, without the real-number instances
    of Tensor/ScalarR.v.  [ATL] is this plus those instances, and is what a
    user imports.  The shipped examples are all generic over [S]
    ([Context {S} `{ScalarLaws S}]), so they import this one: loading Coq's
    reals ([Rbase]) costs about 0.05 s in every file that does (decision #103). *)
From Verisched Require Export Tensor.Scalar Tensor.Core Tensor.Arith Tensor.Sum Tensor.Shape Tensor.Iter.
From Verisched Require Export Rewrites.Context Rewrites.Let Rewrites.Gen Rewrites.Guard.
From Verisched Require Export Rewrites.Distrib Rewrites.Tactics Rewrites.Time Rewrites.Outputs.
From Verisched Require Export Rewrites.Safety.
From Verisched Require Export Reshape.Reshape.
From Verisched Require Export Rewrites.SameProgram.
From Verisched Require Export Rewrites.Normalize.
From Verisched Require Export Targets.Instr Targets.AVX Targets.Vectorize Targets.Gemmini.
From Verisched Require Export Targets.GemminiLoop.
From Verisched Require Export Targets.GemminiLoopConv.
From Verisched Require Export Targets.Blas Targets.BlasLatent.
From Verisched Require Export Rewrites.Steps.
From Verisched Require Export Rewrites.Producers.
From Verisched Require Export Rewrites.Directives Rewrites.Rfactor.
From Verisched Require Export Rewrites.Stage.
From Verisched Require Export Targets.Microkernel.
