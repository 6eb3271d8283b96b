{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The laws a scalar structure may satisfy, assumed by the theorems.
--
-- `Laws 𝕊` says that 0# 1# _+_ _*_ -_ form a commutative ring (with
-- propositional equality) and that `scaledown n`, division by n, is
-- additive and moves across products (scaledown n x · y = x ·
-- scaledown n y).  Evaluation and AD never need these; only the proofs about
-- them (Spec.Theorems) take a `Laws 𝕊` argument.  Float is not an
-- instance: its + is not associative.  The integers and the rationals
-- are (Spec.Scalar.Int, Spec.Scalar.Rational: ℤ-laws, ℚ-laws), which
-- shows the hypothesis can be met; Spec.Theorems.Instances applies the
-- theorems to both.
--
-- The record re-exports the usual ring lemmas (+-assoc, *-comm,
-- distribʳ, zeroˡ, -‿inverseʳ, ...) from the standard library, plus
-- the derived facts the proofs use most: +-interchange (a + b) + (c + d)
-- = (a + c) + (b + d), and the annihilation laws for 0#.
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)

module Spec.Scalar.Laws where

open import Data.Nat using (ℕ)
open import Algebra.Structures using (IsCommutativeRing; IsCommutativeMonoid)
open import Relation.Binary.PropositionalEquality

record Laws (𝕊 : Scalar) : Set where
  open Scalar 𝕊
  field
    isCommutativeRing : IsCommutativeRing _≡_ _+_ _*_ -_ 0# 1#
    scaledown-+       : ∀ n x y → scaledown n (x + y) ≡ scaledown n x + scaledown n y
    scaledown-0#      : ∀ n → scaledown n 0# ≡ 0#
    -- scaledown is a scalar multiple: it moves across a product
    -- (only the AD theorem uses this)
    scaledown-*       : ∀ n x y → scaledown n x * y ≡ x * scaledown n y

  open IsCommutativeRing isCommutativeRing public
    using ( +-assoc; +-comm; +-identityˡ; +-identityʳ; -‿inverseˡ; -‿inverseʳ
          ; *-assoc; *-comm; *-identityˡ; *-identityʳ; distribˡ; distribʳ
          ; zeroˡ; zeroʳ; +-isCommutativeMonoid; *-isCommutativeMonoid )

  -- (a + b) + (c + d) ≡ (a + c) + (b + d)
  +-interchange : ∀ a b c d → (a + b) + (c + d) ≡ (a + c) + (b + d)
  +-interchange a b c d =
    begin
      (a + b) + (c + d)  ≡⟨ +-assoc a b (c + d) ⟩
      a + (b + (c + d))  ≡⟨ cong (a +_) (sym (+-assoc b c d)) ⟩
      a + ((b + c) + d)  ≡⟨ cong (λ x → a + (x + d)) (+-comm b c) ⟩
      a + ((c + b) + d)  ≡⟨ cong (a +_) (+-assoc c b d) ⟩
      a + (c + (b + d))  ≡⟨ sym (+-assoc a c (b + d)) ⟩
      (a + c) + (b + d)  ∎
    where open ≡-Reasoning

  -- -0 = 0 and -(a + b) = -a + -b
  -‿0# : - 0# ≡ 0#
  -‿0# =
    begin
      - 0#          ≡⟨ sym (+-identityˡ (- 0#)) ⟩
      0# + - 0#     ≡⟨ -‿inverseʳ 0# ⟩
      0#            ∎
    where open ≡-Reasoning

  -- a + b = 0 determines b = - a
  +-inverse-unique : ∀ a b → a + b ≡ 0# → b ≡ - a
  +-inverse-unique a b a+b≡0 =
    begin
      b                  ≡⟨ sym (+-identityˡ b) ⟩
      0# + b             ≡⟨ cong (_+ b) (sym (-‿inverseˡ a)) ⟩
      (- a + a) + b      ≡⟨ +-assoc (- a) a b ⟩
      - a + (a + b)      ≡⟨ cong (- a +_) a+b≡0 ⟩
      - a + 0#           ≡⟨ +-identityʳ (- a) ⟩
      - a                ∎
    where open ≡-Reasoning

  -‿+ : ∀ a b → - (a + b) ≡ - a + - b
  -‿+ a b = sym (+-inverse-unique (a + b) (- a + - b) (
    begin
      (a + b) + (- a + - b)    ≡⟨ +-interchange a b (- a) (- b) ⟩
      (a + - a) + (b + - b)    ≡⟨ cong₂ _+_ (-‿inverseʳ a) (-‿inverseʳ b) ⟩
      0# + 0#                  ≡⟨ +-identityˡ 0# ⟩
      0#                       ∎))
    where open ≡-Reasoning

  -- - (a * b) = (- a) * b = a * (- b)
  -‿*-distribˡ : ∀ a b → - a * b ≡ - (a * b)
  -‿*-distribˡ a b = +-inverse-unique (a * b) (- a * b) (
    begin
      a * b + - a * b   ≡⟨ sym (distribʳ b a (- a)) ⟩
      (a + - a) * b     ≡⟨ cong (_* b) (-‿inverseʳ a) ⟩
      0# * b            ≡⟨ zeroˡ b ⟩
      0#                ∎)
    where open ≡-Reasoning

  -‿*-distribʳ : ∀ a b → a * - b ≡ - (a * b)
  -‿*-distribʳ a b = +-inverse-unique (a * b) (a * - b) (
    begin
      a * b + a * - b   ≡⟨ sym (distribˡ a b (- b)) ⟩
      a * (b + - b)     ≡⟨ cong (a *_) (-‿inverseʳ b) ⟩
      a * 0#            ≡⟨ zeroʳ a ⟩
      0#                ∎)
    where open ≡-Reasoning
