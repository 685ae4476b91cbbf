(** The library in one import: language, shapes, rewrites and tactics. *)
From Verisched Require Export Tensor.Scalar Tensor.ScalarR Tensor.Core Tensor.Arith Tensor.Sum Tensor.Shape Tensor.Iter.
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
From Verisched Require Export Rewrites.Directives.
From Verisched Require Export Rewrites.Stage.
From Verisched Require Export Targets.Microkernel.
