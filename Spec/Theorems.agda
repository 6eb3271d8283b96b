{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The theorems proved about the language, stated on their own so that
-- a reader can review the claims without reading the proofs.  Each
-- statement below is a type; its proof is imported from
-- Spec.Proofs.*.  Array values are compared pointwise (`Same`, from
-- Spec.Proofs.Val: ∀ i → a i ≡ b i for arrays, _≡_ for positions);
-- there is no function extensionality.
--
-- 1. eval-ren        renaming preserves meaning: if looking up ρ x in γ
--                    gives what looking up x gives in δ, then
--                    ren ρ e means in γ what e means in δ.
--    eval-↑          weakening by a fresh innermost variable.
--    eval-wk         weakening at a variable v: wk v e means in γ what e
--                    means in γ without v.
--    eval-ctx-swap   exchanging a variable with the next one inwards.
-- 2. eval-sub        substitution preserves meaning: if each σ x means in
--                    γ what x means in δ, subst σ e means in γ what e
--                    means in δ.
--    eval-sub₁       replacing one variable v by e₁ (`sub v e e₁`) means
--                    e with the meaning of e₁ put back at v.
--
-- None of these needs a law of the scalars: they hold for every
-- `Scalar`, Float included.
--
-- 3. opt-sound       the optimiser preserves meaning: ⟦ opt e ⟧ ρ and
--                    ⟦ e ⟧ ρ agree at every position, for every e and ρ;
--    opt*-sound      so does any number of passes,
--    optimise-sound  and the optimiser the dump uses.
--    These assume `Laws 𝕊`: 0# 1# _+_ _*_ -_ form a commutative ring
--    (with _≡_) and scaledown n is additive.  They cover every rule of
--    Spec.Lang.Opt (selections, η-rules for blocks and windows, sums,
--    sum-zb, constant folding).
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)
open import Spec.Scalar.Laws using (Laws)

module Spec.Theorems (𝕊 : Scalar) where

open import Data.Product using (_,_)

open import Spec.Lang.Syntax
open import Spec.Lang.Subst
open import Spec.Lang.Eval 𝕊
open import Spec.Lang.Opt using (opt; opt*; optimise)
open import Spec.Proofs.Val 𝕊 using (Same)
import Spec.Proofs.Ren 𝕊 as Ren
import Spec.Proofs.Sub 𝕊 as Sub
import Spec.Proofs.Opt 𝕊 as Opt
open Ren using (drop; swap-env)
open Sub using (insert)

private
  variable
    Γ Δ   : Ctx
    is ip : IS

------------------------------------------------------------------------
-- Renaming

eval-ren : (ρ : Ren Γ Δ) {γ : Env Δ} {δ : Env Γ}
         → (∀ {is} (x : is ∈ Γ) → Same is (lookup (ρ x) γ) (lookup x δ))
         → (e : E Γ is) → Same is (⟦ ren ρ e ⟧ γ) (⟦ e ⟧ δ)
eval-ren = Ren.eval-ren

eval-↑ : (e : E Γ is) (γ : Env Γ) (a : Val ip)
       → Same is (⟦ ↑_ {ip = ip} e ⟧ (γ , a)) (⟦ e ⟧ γ)
eval-↑ = Ren.eval-↑

eval-wk : (v : is ∈ Γ) (e : E (Γ / v) ip) (γ : Env Γ)
        → Same ip (⟦ wk v e ⟧ γ) (⟦ e ⟧ (drop v γ))
eval-wk = Ren.eval-wk

eval-ctx-swap : (x : is ∈ Γ) (e : E Γ ip) (γ : Env Γ)
              → Same ip (⟦ ctx-swap x e ⟧ (swap-env x γ)) (⟦ e ⟧ γ)
eval-ctx-swap = Ren.eval-ctx-swap

------------------------------------------------------------------------
-- Substitution

eval-sub : (σ : Sub Γ Δ) {γ : Env Δ} {δ : Env Γ}
         → (∀ {is} (x : is ∈ Γ) → Same is (⟦ σ x ⟧ γ) (lookup x δ))
         → (e : E Γ is) → Same is (⟦ subst σ e ⟧ γ) (⟦ e ⟧ δ)
eval-sub = Sub.eval-sub

eval-sub₁ : (v : is ∈ Γ) (e : E Γ ip) (e₁ : E (Γ / v) is) (γ : Env (Γ / v))
          → Same ip (⟦ sub v e e₁ ⟧ γ) (⟦ e ⟧ (insert v γ (⟦ e₁ ⟧ γ)))
eval-sub₁ = Sub.eval-sub₁

------------------------------------------------------------------------
-- The optimiser

module _ (laws : Laws 𝕊) where

  opt-sound : (e : E Γ is) (ρ : Env Γ) → Same is (⟦ opt e ⟧ ρ) (⟦ e ⟧ ρ)
  opt-sound = Opt.opt-sound laws

  opt*-sound : ∀ n (e : E Γ is) (ρ : Env Γ) → Same is (⟦ opt* n e ⟧ ρ) (⟦ e ⟧ ρ)
  opt*-sound = Opt.opt*-sound laws

  optimise-sound : (e : E Γ is) (ρ : Env Γ) → Same is (⟦ optimise e ⟧ ρ) (⟦ e ⟧ ρ)
  optimise-sound = Opt.optimise-sound laws
