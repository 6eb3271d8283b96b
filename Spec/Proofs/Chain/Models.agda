{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- dump-correct (Spec.Proofs.Chain.Dump) for every chain Main prints:
-- the shipped models by name (their PF proofs are found by pf?,
-- Spec.Model.PF) and every elaborated model file (its PF proof is a
-- field of Elaborated; Main seeds it with `one`).  Each seed is the
-- renaming of a clean expression by refl: `one` is `ren (emb c) one`,
-- and the dot model's seed, the base variable `seed` (v₄ of its full
-- scope), is `ren (emb c) (var v₃)`.
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)
open import Spec.Scalar.Laws using (Laws)

module Spec.Proofs.Chain.Models (𝕊 : Scalar) (laws : Laws 𝕊) where

open import Relation.Binary.PropositionalEquality using (refl)

open import Spec.Lang.Syntax using (var; one; v₃)
open import Spec.Front.Model using (Elaborated)
open import Spec.Model.PF using (cnn-pf; dot-pf; chain-pf; ops-pf)
import Spec.Model.CNN as CNN
import Spec.Model.Dot as Dot
import Spec.Model.ChainExample as ChainExample
import Spec.Model.Ops as Ops
open import Spec.Proofs.Chain.Dump 𝕊 laws using (DumpCorrect; dump-correct)

cnn-dump : DumpCorrect CNN.chain cnn-pf CNN.seed one
cnn-dump = dump-correct CNN.chain cnn-pf CNN.seed one refl

dot-dump : DumpCorrect Dot.chain dot-pf Dot.seed (var v₃)
dot-dump = dump-correct Dot.chain dot-pf Dot.seed (var v₃) refl

chain-dump : DumpCorrect ChainExample.chain chain-pf ChainExample.seed one
chain-dump = dump-correct ChainExample.chain chain-pf ChainExample.seed one refl

ops-dump : DumpCorrect Ops.chain ops-pf Ops.seed one
ops-dump = dump-correct Ops.chain ops-pf Ops.seed one refl

elaborated-dump : (m : Elaborated) → DumpCorrect (Elaborated.chain m) (Elaborated.pf m) one one
elaborated-dump m = dump-correct (Elaborated.chain m) (Elaborated.pf m) one one refl
