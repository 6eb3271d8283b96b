{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The optimiser is sound (Spec.Lang.Opt): for every expression e and
-- environment ρ, ⟦ opt e ⟧ ρ and ⟦ e ⟧ ρ agree at every position (and
-- are equal positions for index expressions); the same for opt* and
-- `optimise`.  Assumes the scalars satisfy Laws (a commutative ring
-- with an additive scaledown).
--
-- The case analysis is Spec.Proofs.Opt.Main; the soundness of the
-- collapse of a sum of a zero-but is Spec.Proofs.Opt.SumZb.
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)
open import Spec.Scalar.Laws using (Laws)

module Spec.Proofs.Opt (𝕊 : Scalar) (laws : Laws 𝕊) where

open import Spec.Lang.Syntax
open import Spec.Lang.Opt using (opt; opt*; optimise; default-fuel)
open import Spec.Lang.Eval 𝕊
open import Spec.Proofs.Val 𝕊 using (Same)
import Spec.Proofs.Opt.SumZb 𝕊 laws as SumZb
import Spec.Proofs.Opt.Main 𝕊 laws (λ i j a ρ → SumZb.sum-zb-sound i j a ρ) as Main

private
  variable
    Γ  : Ctx
    is : IS

opt-sound : (e : E Γ is) (ρ : Env Γ) → Same is (⟦ opt e ⟧ ρ) (⟦ e ⟧ ρ)
opt-sound = Main.opt-sound

opt*-sound : ∀ n (e : E Γ is) (ρ : Env Γ) → Same is (⟦ opt* n e ⟧ ρ) (⟦ e ⟧ ρ)
opt*-sound = Main.opt*-sound

optimise-sound : (e : E Γ is) (ρ : Env Γ) → Same is (⟦ optimise e ⟧ ρ) (⟦ e ⟧ ρ)
optimise-sound = Main.opt*-sound default-fuel
