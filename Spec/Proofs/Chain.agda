{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Reverse mode over a let-chain is correct (chain-adjoint).
--
-- For a chain c over a base context Γ₀ with full scope Φ, the reverse
-- pass of Spec.Lang.Chain (typed as `base-env`, Spec.Proofs.Chain.Typed;
-- `chain-grads-split` shows it is what chain-grads lists) gives, for
-- every environment γ of Φ that is *consistent* and every tangent v
-- of the base variables,
--
--   Σ_b ⟨ ⟦ (base-env c y seed)_b ⟧ γ , v_b ⟩  ≡  ⟨ ⟦ seed ⟧ γ , (ctan c γ v)_y ⟩
--
-- where `ctan c γ v` is forward mode through the chain: base variables
-- get v, every binding x = e gets D⟦ e ⟧ of the tangents before it,
-- every placeholder d_x gets 0.  Consistent: for each binding x (last
-- first) the gradient entry chain-grads emits for x (`d_ x`), evaluated
-- in γ, is the value γ gives the placeholder d_x -- the placeholders
-- hold what the generated code stores in them.
--
-- For a placeholder-free chain whose bindings hold their values
-- (Spec.Proofs.Chain.Inline: PF, ValCons), (ctan c γ v)_y is D⟦ e* ⟧
-- of the inlined objective e* (chain-adjoint-inline), so the chain's
-- base gradients pair with every tangent as ∇₀ e* does
-- (chain-∇-adjoint), hence equal its entries at every position
-- (chain-∇-correct, via one-hot tangents, Spec.Proofs.Chain.OneHot).
--
-- Proof: the reverse pass keeps, step by step, ip Φ δ γ (tangent of the
-- bindings not yet processed, zero beyond) constant: ∇-correct adds
-- ⟨ γ(d_x) , D⟦ e ⟧ ⟩ for binding x = e, which is what dropping x's
-- tangent D⟦ e ⟧ takes away, by consistency.  Needs Laws 𝕊.
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)
open import Spec.Scalar.Laws using (Laws)

module Spec.Proofs.Chain (𝕊 : Scalar) (laws : Laws 𝕊) where

open import Data.Product using (_×_; _,_; proj₁; proj₂)
open import Data.Unit using (⊤; tt)
open import Relation.Binary.PropositionalEquality hiding (subst)

open import Spec.Array.Base using (S; P; K)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (Ren; ren)
open import Spec.Lang.Eval 𝕊
open import Spec.Lang.AD using (EnvE; lookupE; ∇; ∇₀)
open import Spec.Lang.Chain
open import Spec.Proofs.Chain.Typed
open import Spec.Proofs.Chain.Inline 𝕊 using (ctan; PF; clean; emb; inl; ValCons; base-env₀; ctan-inline)
open import Spec.Proofs.Forward 𝕊
open import Spec.Proofs.Forward.Subst 𝕊 using (D-ren)
open import Spec.Proofs.Ren 𝕊 using (EnvRen)
open import Spec.Proofs.Val 𝕊 using (Same-refl)
open import Spec.Proofs.AD.Env 𝕊 laws
open import Spec.Proofs.AD 𝕊 laws using (∇-correct; ∇₀-correct)
open import Spec.Proofs.Chain.OneHot 𝕊 laws using (ip-determines)

open Scalar 𝕊 using (R; 0#; _+_)
open Laws laws

private
  variable
    Δ Φ : Ctx
    p s : S

------------------------------------------------------------------------
-- Tangents and environments along Δ ⊑ Φ

-- a tangent of Δ, zero on the later bindings
pad : Δ ⊑ Φ → TEnv Δ → TEnv Φ
pad here      t = t
pad (there w) t = pad w ((t , K 0#) , K 0#)

-- the part of an environment of Φ that scopes Δ
envAt : Δ ⊑ Φ → Env Φ → Env Δ
envAt here      γ = γ
envAt (there w) γ = proj₁ (proj₁ (envAt w γ))

pad-lookup : (w : Δ ⊑ Φ) (t : TEnv Δ) (x : ar s ∈ Δ) → tlookup (pad w t) (wkw w x) ≡ tlookup t x
pad-lookup here      t x = refl
pad-lookup (there w) t x = pad-lookup w ((t , K 0#) , K 0#) (vₛ (vₛ x))

envAt-ren : (w : Δ ⊑ Φ) (γ : Env Φ) → EnvRen (wkw w) γ (envAt w γ)
envAt-ren here      γ {is} x = Same-refl is (lookup x γ)
envAt-ren (there w) γ      x = envAt-ren w γ (vₛ (vₛ x))

------------------------------------------------------------------------
-- Consistency of the placeholders

-- Along the reverse pass from δ: each binding's gradient entry (the
-- one chain-grads lists for it), evaluated in γ, is γ's value of its
-- placeholder.
Consistent : Chain Δ → Δ ⊑ Φ → Env Φ → EnvE Φ Φ → Set
Consistent (ε _)         w γ δ = ⊤
Consistent (c ▹ (_ , e)) w γ δ =
  (∀ i → ⟦ lookupE δ (wkw w v₀) ⟧ γ i ≡ lookup (wkw w v₁) γ i)
  × Consistent c (there w) γ (step (wkw w) e δ)

------------------------------------------------------------------------
-- Inner products with padded tangents

ip-pad : (w : Δ ⊑ Φ) (δ : EnvE Φ Φ) (γ : Env Φ) (t : TEnv Δ)
       → ip Φ δ γ (pad w t) ≡ ip Δ (pullE (wkw w) δ) γ t
ip-pad {Φ = Φ} here δ γ t = cong (λ δ′ → ip Φ δ′ γ t) (sym (pullE-id {Φ} δ))
ip-pad {Δ = Δ} (there {p = p} w) δ γ t =
  trans (ip-pad w δ γ ((t , K 0#) , K 0#))
        (trans (cong (_+ ⟨ ⟦ lookupE δ (wkw w v₀) ⟧ γ , K 0# ⟩)
                     (trans (cong (X +_) (⟨⟩-zeroʳ (⟦ lookupE δ (wkw w v₁) ⟧ γ))) (+-identityʳ X)))
               (trans (cong (X +_) (⟨⟩-zeroʳ (⟦ lookupE δ (wkw w v₀) ⟧ γ))) (+-identityʳ X)))
  where X = ip Δ (pullE (wkw (there w)) δ) γ t

-- changing the tangent of the innermost variable of Δ
ip-set : ∀ {Δ} (w : Δ ▹ ar p ⊑ Φ) (δ : EnvE Φ Φ) (γ : Env Φ) (t : TEnv Δ) (T : _)
       → ip Φ δ γ (pad w (t , T)) ≡ ip Φ δ γ (pad w (t , K 0#)) + ⟨ ⟦ lookupE δ (wkw w v₀) ⟧ γ , T ⟩
ip-set {Δ = Δ} w δ γ t T =
  trans (ip-pad w δ γ (t , T))
        (cong (_+ ⟨ ⟦ lookupE δ (wkw w v₀) ⟧ γ , T ⟩)
              (sym (trans (ip-pad w δ γ (t , K 0#))
                          (trans (cong (X +_) (⟨⟩-zeroʳ (⟦ lookupE δ (wkw w v₀) ⟧ γ))) (+-identityʳ X)))))
  where X = ip Δ (pullE (λ x → wkw w (vₛ x)) δ) γ t

------------------------------------------------------------------------
-- The invariant of the reverse pass

chain-ip : (c : Chain Δ) (w : Δ ⊑ Φ) (γ : Env Φ) (δ : EnvE Φ Φ) (v : TEnv (baseCtx c))
         → Consistent c w γ δ
         → ip Φ (final c (wkw w) δ) γ (pad (baseW c w) v) ≡ ip Φ δ γ (pad w (ctan c (envAt w γ) v))
chain-ip (ε _) w γ δ v _ = refl
chain-ip {Φ = Φ} (c ▹ (x , e)) w γ δ v (cons , rest) =
  begin
    ip Φ (final c (wkw w′) δ′) γ (pad (baseW c w′) v)
      ≡⟨ chain-ip c w′ γ δ′ v rest ⟩
    ip Φ δ′ γ U
      ≡⟨ ∇-correct (ren (wkw w′) e) (var (wkw w v₁)) δ γ U ⟩
    ip Φ δ γ U + ⟨ lookup (wkw w v₁) γ , D⟦ ren (wkw w′) e ⟧ γ U ⟩
      ≡⟨ cong (ip Φ δ γ U +_)
              (⟨⟩-cong (λ i → sym (cons i))
                       (D-ren (wkw w′) (envAt-ren w′ γ) (λ y i → cong (λ f → f i) (pad-lookup w′ t y)) e)) ⟩
    ip Φ δ γ U + ⟨ ⟦ lookupE δ (wkw w v₀) ⟧ γ , T ⟩
      ≡⟨ sym (ip-set w δ γ (t , K 0#) T) ⟩
    ip Φ δ γ (pad w ((t , K 0#) , T))
      ∎
  where
    open ≡-Reasoning
    w′ = there w
    δ′ = step (wkw w) e δ
    t  = ctan c (envAt w′ γ) v
    T  = D⟦ e ⟧ (envAt w′ γ) t
    U  = pad w′ t

------------------------------------------------------------------------
-- The theorem

-- Σ_b ⟨ (chain gradient of b) , v_b ⟩ = ⟨ seed , forward tangent of y ⟩
chain-adjoint : (c : Chain Φ) (y : ar p ∈ Φ) (seed : E Φ (ar p)) (γ : Env Φ) (v : TEnv (baseCtx c))
              → Consistent c here γ (seed-env y seed)
              → ip (baseCtx c) (base-env c y seed) γ v ≡ ⟨ ⟦ seed ⟧ γ , tlookup (ctan c γ v) y ⟩
chain-adjoint {Φ = Φ} c y seed γ v cons =
  trans (sym (ip-pad (baseW c here) (final c (λ x → x) (seed-env y seed)) γ v))
        (trans (chain-ip c here γ (seed-env y seed) v cons)
               (∇₀-correct (var y) seed γ (ctan c γ v)))

------------------------------------------------------------------------
-- Against the inlined objective

-- For a placeholder-free chain whose bindings hold their values, the
-- right-hand side is the forward derivative of the inlined objective
-- e* = inl c pf y over the base context.
chain-adjoint-inline : (c : Chain Φ) (pf : PF c) (y : ar p ∈ clean c) (seed : E Φ (ar p))
                       (γ : Env Φ) (v : TEnv (baseCtx c))
                     → ValCons c γ → Consistent c here γ (seed-env (emb c y) seed)
                     → ip (baseCtx c) (base-env c (emb c y) seed) γ v
                       ≡ ⟨ ⟦ seed ⟧ γ , D⟦ inl c pf y ⟧ (base-env₀ c γ) v ⟩
chain-adjoint-inline c pf y seed γ v vc cons =
  trans (chain-adjoint c (emb c y) seed γ v cons)
        (⟨⟩-cong (λ _ → refl) (ctan-inline c pf γ v vc y))

-- ... which is the adjoint of differentiating e* directly: for a seed
-- s₀ over the base context with the value of `seed`, the chain's base
-- gradients and ∇₀ e* s₀ pair equally with every tangent.
chain-∇-adjoint : (c : Chain Φ) (pf : PF c) (y : ar p ∈ clean c) (seed : E Φ (ar p))
                  (s₀ : E (baseCtx c) (ar p)) (γ : Env Φ) (v : TEnv (baseCtx c))
                → ValCons c γ → Consistent c here γ (seed-env (emb c y) seed)
                → (∀ i → ⟦ s₀ ⟧ (base-env₀ c γ) i ≡ ⟦ seed ⟧ γ i)
                → ip (baseCtx c) (base-env c (emb c y) seed) γ v
                  ≡ ip (baseCtx c) (∇₀ (inl c pf y) s₀) (base-env₀ c γ) v
chain-∇-adjoint c pf y seed s₀ γ v vc cons hs =
  trans (chain-adjoint-inline c pf y seed γ v vc cons)
        (trans (⟨⟩-cong (λ i → sym (hs i)) (λ _ → refl))
               (sym (∇₀-correct (inl c pf y) s₀ (base-env₀ c γ) v)))

-- Entrywise: the chain's gradient of every base array variable x
-- (evaluated in γ) is the gradient of the inlined objective (evaluated
-- in the base environment), at every position.
chain-∇-correct : (c : Chain Φ) (pf : PF c) (y : ar p ∈ clean c) (seed : E Φ (ar p))
                  (s₀ : E (baseCtx c) (ar p)) (γ : Env Φ)
                → ValCons c γ → Consistent c here γ (seed-env (emb c y) seed)
                → (∀ i → ⟦ s₀ ⟧ (base-env₀ c γ) i ≡ ⟦ seed ⟧ γ i)
                → (x : ar s ∈ baseCtx c) (i : P s)
                → ⟦ lookupE {baseCtx c} (base-env c (emb c y) seed) x ⟧ γ i
                  ≡ ⟦ lookupE {baseCtx c} (∇₀ (inl c pf y) s₀) x ⟧ (base-env₀ c γ) i
chain-∇-correct c pf y seed s₀ γ vc cons hs =
  ip-determines (baseCtx c) (base-env c (emb c y) seed) γ (∇₀ (inl c pf y) s₀) (base-env₀ c γ)
                (λ v → chain-∇-adjoint c pf y seed s₀ γ v vc cons hs)
