{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Inlining a let-chain, and the chain's forward tangent as the
-- forward derivative of the inlined objective.
--
-- (clean, emb and PF are defined, and PF decided, in Spec.Lang.Chain.Clean.)
-- A chain is placeholder-free (`PF`) when every binding x = e is, as
-- a term, a renaming `ren (emb c) e′` of an expression e′ over the
-- *clean* scope of the chain before it (base variables and earlier
-- bindings, no d_ placeholders) -- the side condition stated in the
-- header of Spec.Lang.Chain, which the types there do not enforce.
-- `inl c pf` then substitutes every binding into its uses, giving each
-- clean variable an expression over the base context; the inlined
-- objective for a variable y is `inl c pf y`.
--
-- `ctan-inline`: if γ gives every binding the value of its expression
-- (`ValCons`), the forward tangent of Spec.Proofs.Chain (ctan) at a
-- clean variable y is D⟦ inl c pf y ⟧ at the base environment (by
-- eval-sub/eval-ren for the values and D-sub/D-ren for the tangents).
-- No law of the scalars is needed.
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)

module Spec.Proofs.Chain.Inline (𝕊 : Scalar) where

open import Data.Product using (_×_; _,_; proj₁; proj₂) renaming (Σ to Σ′)
open import Data.Unit using (⊤; tt)
open import Relation.Binary.PropositionalEquality hiding (subst)

open import Spec.Array.Base using (S; K)
open import Data.Nat using (zero; suc)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (Ren; ren; Sub; subst)
open import Spec.Lang.Eval 𝕊
open import Spec.Lang.Chain using (Chain; ε; _▹_)
open import Spec.Lang.Chain.Clean public using (clean; emb; PF; pf?)
open import Spec.Proofs.Chain.Typed using (baseCtx)
open import Spec.Proofs.Forward 𝕊
open import Spec.Proofs.Forward.Subst 𝕊 using (D-ren; D-sub; TRen; TSub)
open import Spec.Proofs.Ren 𝕊 using (EnvRen; eval-ren)
open import Spec.Proofs.Sub 𝕊 using (EnvSub; eval-sub)
open import Spec.Proofs.Val 𝕊 using (Same; Same-refl; Same-sym; Same-trans)

open Scalar 𝕊 using (R; 0#)

private
  variable
    Δ : Ctx
    is : IS
    p s : S

------------------------------------------------------------------------
-- The clean scope: base variables and bindings, no placeholders

clean-env : (c : Chain Δ) → Env Δ → Env (clean c)
clean-env (ε _)   γ             = γ
clean-env (c ▹ _) ((γ , _) , a) = clean-env c γ , a

clean-tan : (c : Chain Δ) → TEnv Δ → TEnv (clean c)
clean-tan (ε _)   t             = t
clean-tan (c ▹ _) ((t , _) , a) = clean-tan c t , a

base-env₀ : (c : Chain Δ) → Env Δ → Env (baseCtx c)
base-env₀ (ε _)   γ             = γ
base-env₀ (c ▹ _) ((γ , _) , _) = base-env₀ c γ

emb-EnvRen : (c : Chain Δ) (γ : Env Δ) → EnvRen (emb c) γ (clean-env c γ)
emb-EnvRen (ε _)   γ             {is} x      = Same-refl is (lookup x γ)
emb-EnvRen (c ▹ _) ((γ , _) , a) {is} (var# zero refl)  = Same-refl is a
emb-EnvRen (c ▹ _) ((γ , _) , a)      (var# (suc n) p) = emb-EnvRen c γ (var# n p)

emb-TRen : (c : Chain Δ) (t : TEnv Δ) → TRen (emb c) t (clean-tan c t)
emb-TRen (ε _)   t             x      i = refl
emb-TRen (c ▹ _) ((t , _) , a) (var# zero refl)  i = refl
emb-TRen (c ▹ _) ((t , _) , a) (var# (suc n) p) i = emb-TRen c t (var# n p) i

------------------------------------------------------------------------
-- Placeholder-free chains and inlining

-- every clean variable as an expression over the base context
inl : (c : Chain Δ) → PF c → Sub (clean c) (baseCtx c)
inl (ε _)   _                  x      = var x
inl (c ▹ _) (pf , (e′ , _))    (var# zero refl)  = subst (inl c pf) e′
inl (c ▹ _) (pf , _)           (var# (suc n) p) = inl c pf (var# n p)

-- every binding holds the value of its expression
ValCons : Chain Δ → Env Δ → Set
ValCons (ε _)         γ             = ⊤
ValCons (c ▹ (_ , e)) ((γ , _) , a) = (∀ i → a i ≡ ⟦ e ⟧ γ i) × ValCons c γ

------------------------------------------------------------------------
-- Running a chain forward: each binding gets the value of its
-- expression, each placeholder zero (the first step of the generated
-- code; Spec.Proofs.Chain.Build then fills the placeholders)

run : (c : Chain Δ) → Env (baseCtx c) → Env Δ
run (ε _)         γ₀ = γ₀
run (c ▹ (_ , e)) γ₀ = (run c γ₀ , K 0#) , ⟦ e ⟧ (run c γ₀)

run-values : (c : Chain Δ) (γ₀ : Env (baseCtx c)) → ValCons c (run c γ₀)
run-values (ε _)   γ₀ = tt
run-values (c ▹ _) γ₀ = (λ i → refl) , run-values c γ₀

run-base : (c : Chain Δ) (γ₀ : Env (baseCtx c)) → base-env₀ c (run c γ₀) ≡ γ₀
run-base (ε _)   γ₀ = refl
run-base (c ▹ _) γ₀ = run-base c γ₀

------------------------------------------------------------------------
-- Forward mode through a chain: base variables get v, a binding x = e
-- gets D⟦ e ⟧ of the tangents before it, a placeholder gets 0.

ctan : (c : Chain Δ) → Env Δ → TEnv (baseCtx c) → TEnv Δ
ctan (ε _)         γ             v = v
ctan (c ▹ (_ , e)) ((γ , _) , _) v = (ctan c γ v , K 0#) , D⟦ e ⟧ γ (ctan c γ v)

------------------------------------------------------------------------
-- Inlining preserves values and tangents

inl-correct : (c : Chain Δ) (pf : PF c) (γ : Env Δ) (v : TEnv (baseCtx c)) → ValCons c γ
            → EnvSub (inl c pf) (base-env₀ c γ) (clean-env c γ)
              × TSub (inl c pf) (base-env₀ c γ) v (clean-tan c (ctan c γ v))
inl-correct (ε _) pf γ v vc = (λ {is} x → Same-refl is (lookup x γ)) , (λ x i → refl)
inl-correct (c ▹ (n , e)) (pf , (e′ , refl)) ((γ , _) , a) v (va , vc) = H , T
  where
    IH = inl-correct c pf γ v vc
    H : EnvSub (inl (c ▹ (n , e)) (pf , (e′ , refl))) (base-env₀ c γ) (clean-env c γ , a)
    H (var# zero refl) i = trans (eval-sub (inl c pf) (proj₁ IH) e′ i)
                   (trans (sym (eval-ren (emb c) (emb-EnvRen c γ) e′ i)) (sym (va i)))
    H (var# (suc n) p) = proj₁ IH (var# n p)
    T : TSub (inl (c ▹ (n , e)) (pf , (e′ , refl))) (base-env₀ c γ) v (clean-tan c (ctan c γ v) , D⟦ e ⟧ γ (ctan c γ v))
    T (var# zero refl) i = trans (D-sub (inl c pf) (proj₁ IH) (proj₂ IH) e′ i)
                   (sym (D-ren (emb c) (emb-EnvRen c γ) (emb-TRen c (ctan c γ v)) e′ i))
    T (var# (suc n) p) = proj₂ IH (var# n p)

-- the chain's tangent of a clean variable y is the forward derivative
-- of the inlined y
ctan-inline : (c : Chain Δ) (pf : PF c) (γ : Env Δ) (v : TEnv (baseCtx c)) → ValCons c γ
            → (y : ar p ∈ clean c)
            → ∀ i → tlookup (ctan c γ v) (emb c y) i ≡ D⟦ inl c pf y ⟧ (base-env₀ c γ) v i
ctan-inline c pf γ v vc y i =
  trans (emb-TRen c (ctan c γ v) y i) (sym (proj₂ (inl-correct c pf γ v vc) y i))
