{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The gradients of the dump, end to end.
--
-- Spec.Dump.Model prints, for a chain c and a seed, the optimised
-- reverse pass `chain-grads-opt c seed` (every entry through
-- `optimise`; the entries of inputs are then left out).  Here:
--
--   dump-grads   that list is the optimised binding entries followed by
--                the optimised base entries, env-map optimise of
--                base-env (chain-grads-split, mapped);
--   chain-values for a placeholder-free chain and a seed that reads no
--                placeholder, chain-∇-correct with its hypotheses
--                discharged by chain-env (Spec.Proofs.Chain.Build);
--   dump-values  for a placeholder-free chain and a seed that reads no
--                placeholder (ren (emb c) s′), every optimised base
--                entry, evaluated in the environment the generated code
--                computes from base values γ₀ (chain-env,
--                Spec.Proofs.Chain.Build), is at every position the
--                entry of ∇₀ e* s₀ at γ₀, where e* = inl c pf y is the
--                inlined objective and s₀ the inlined seed;
--   dump-adjoint so, with ∇₀-correct, they pair with every base tangent
--                as the forward derivative of e* does.
--
-- The proof composes optimise-sound, chain-∇-correct (whose hypotheses
-- Consistent and ValCons are now chain-env-consistent and
-- chain-env-values) and eval-only for the base part of chain-env.
-- Needs Laws 𝕊.
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)
open import Spec.Scalar.Laws using (Laws)

module Spec.Proofs.Chain.Dump (𝕊 : Scalar) (laws : Laws 𝕊) where

open import Data.List using (List; _++_; [_]; map)
open import Data.List.Properties using (map-++-commute)
open import Data.Product using (_×_; _,_; proj₁; proj₂) renaming (Σ to Σ′)
open import Data.Unit using (tt)
open import Relation.Binary.PropositionalEquality hiding (subst; [_])
open import Relation.Binary.PropositionalEquality using () renaming (subst to substEq)

open import Spec.Array.Base using (S; P)
open import Data.Nat using (zero; suc)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (ren; subst)
open import Spec.Lang.Eval 𝕊
open import Spec.Lang.AD using (EnvE; lookupE; env-map; ∇₀)
open import Spec.Lang.Opt using (optimise)
open import Spec.Lang.Chain
open import Spec.Proofs.Chain.Typed
open import Spec.Proofs.Chain.Inline 𝕊 using (PF; clean; emb; inl; base-env₀; inl-correct; emb-EnvRen)
open import Spec.Proofs.Chain 𝕊 laws using (chain-∇-correct)
open import Spec.Proofs.Chain.Build 𝕊 laws
open import Spec.Proofs.Chain.Local 𝕊 using (eval-only; Only-all)
open import Spec.Proofs.Chain.OneHot 𝕊 laws using (tzero)
open import Spec.Proofs.Forward 𝕊 using (TEnv; D⟦_⟧)
open import Spec.Proofs.Ren 𝕊 using (eval-ren)
open import Spec.Proofs.Sub 𝕊 using (eval-sub)
open import Spec.Proofs.Opt 𝕊 using (optimise-sound)
open import Spec.Proofs.AD 𝕊 laws using (∇₀-correct)
open import Spec.Proofs.AD.Env 𝕊 laws using (ip; ⟨_,_⟩; ⟨⟩-cong)

open Scalar 𝕊 using (_+_)

private
  variable
    Γ Δ Φ Ξ : Ctx
    p s     : S

------------------------------------------------------------------------
-- The list

lookupE-map : (f : ∀ {s} → E Δ (ar s) → E Ξ (ar s)) (δ : EnvE Γ Δ) (x : ar s ∈ Γ)
            → lookupE (env-map {Γ = Γ} f δ) x ≡ f (lookupE δ x)
lookupE-map {Γ = Γ ▹ ar _} f (δ , e) v₀     = refl
lookupE-map {Γ = Γ ▹ ar _} f (δ , e) (var# (suc nx) px) = lookupE-map {Γ = Γ} f δ (var# nx px)
lookupE-map {Γ = Γ ▹ ix _} f δ       (var# (suc nx) px) = lookupE-map {Γ = Γ} f δ (var# nx px)

opt-env-grads : (ns : Names Γ) (δ : EnvE Γ Φ)
              → map opt-gradient (env-grads ns δ) ≡ env-grads ns (env-map {Γ = Γ} optimise δ)
opt-env-grads {ε}        ns       δ       = refl
opt-env-grads {Γ ▹ ar s} (ns , x) (δ , e) =
  trans (map-++-commute opt-gradient (env-grads ns δ) [ gradient (d_ x) x s e ])
        (cong (_++ [ gradient (d_ x) x s (optimise e) ]) (opt-env-grads ns δ))
opt-env-grads {Γ ▹ ix s} (ns , _) δ       = opt-env-grads ns δ

-- the optimised reverse pass: binding entries, then base entries
dump-grads : (c : Chain Φ) (y : ar p ∈ Φ) (seed : E Φ (ar p))
           → map opt-gradient (chain-grads c y seed)
             ≡ map opt-gradient (binding-grads c (λ x → x) (seed-env y seed))
               ++ env-grads (baseNames c) (env-map {Γ = baseCtx c} optimise (base-env c y seed))
dump-grads c y seed =
  trans (cong (map opt-gradient) (chain-grads-split c y seed))
        (trans (map-++-commute opt-gradient (binding-grads c (λ x → x) (seed-env y seed)) _)
               (cong (map opt-gradient (binding-grads c (λ x → x) (seed-env y seed)) ++_)
                     (opt-env-grads (baseNames c) (base-env c y seed))))

------------------------------------------------------------------------
-- The values

module _ (c : Chain Φ) (pf : PF c) (y : ar p ∈ clean c) (s′ : E (clean c) (ar p))
         (γ₀ : Env (baseCtx c)) where

  private
    seed = ren (emb c) s′
    γ    = chain-env c (emb c y) seed γ₀
    vc   = chain-env-values c pf y s′ γ₀

    -- the inlined seed over the base variables means the seed
    seed-inl : ∀ i → ⟦ subst (inl c pf) s′ ⟧ (base-env₀ c γ) i ≡ ⟦ seed ⟧ γ i
    seed-inl i = trans (eval-sub (inl c pf) (proj₁ (inl-correct c pf γ (tzero {baseCtx c}) vc)) s′ i)
                       (sym (eval-ren (emb c) (emb-EnvRen c γ) s′ i))

  -- the chain's base gradients, evaluated in chain-env, are those of
  -- the inlined objective: chain-∇-correct with its hypotheses discharged
  chain-values : (x : ar s ∈ baseCtx c) (i : P s)
               → ⟦ lookupE {baseCtx c} (base-env c (emb c y) seed) x ⟧ γ i
                 ≡ ⟦ lookupE {baseCtx c} (∇₀ (inl c pf y) (subst (inl c pf) s′)) x ⟧ γ₀ i
  chain-values x i =
    trans (chain-∇-correct c pf y seed (subst (inl c pf) s′) γ vc
             (chain-env-consistent c pf y s′ γ₀) seed-inl x i)
          (eval-only (λ z _ → chain-env-base c pf y s′ γ₀ z)
             (lookupE {baseCtx c} (∇₀ (inl c pf y) (subst (inl c pf) s′)) x)
             (Only-all (λ _ → tt) (lookupE {baseCtx c} (∇₀ (inl c pf y) (subst (inl c pf) s′)) x)) i)

  dump-values : (x : ar s ∈ baseCtx c) (i : P s)
              → ⟦ lookupE {baseCtx c} (env-map {Γ = baseCtx c} optimise (base-env c (emb c y) seed)) x ⟧ γ i
                ≡ ⟦ lookupE {baseCtx c} (∇₀ (inl c pf y) (subst (inl c pf) s′)) x ⟧ γ₀ i
  dump-values x i =
    trans (cong (λ e → ⟦ e ⟧ γ i) (lookupE-map {Γ = baseCtx c} optimise (base-env c (emb c y) seed) x))
      (trans (optimise-sound laws (lookupE {baseCtx c} (base-env c (emb c y) seed) x) γ i)
             (chain-values x i))

  -- pairings of gradient environments with equal entries are equal
  private
    ip-cong : (Γ : Ctx) (δ : EnvE Γ Δ) (ρ : Env Δ) (δ′ : EnvE Γ Ξ) (ρ′ : Env Ξ)
            → (∀ {s} (x : ar s ∈ Γ) (i : P s) → ⟦ lookupE δ x ⟧ ρ i ≡ ⟦ lookupE δ′ x ⟧ ρ′ i)
            → (v : TEnv Γ) → ip Γ δ ρ v ≡ ip Γ δ′ ρ′ v
    ip-cong ε          δ       ρ δ′        ρ′ h v       = refl
    ip-cong (Γ ▹ ar s) (δ , e) ρ (δ′ , e′) ρ′ h (v , w) =
      cong₂ _+_ (ip-cong Γ δ ρ δ′ ρ′ (λ x → h (vₛ x)) v) (⟨⟩-cong (h v₀) (λ _ → refl))
    ip-cong (Γ ▹ ix s) δ       ρ δ′        ρ′ h v       = ip-cong Γ δ ρ δ′ ρ′ (λ x → h (vₛ x)) v

  dump-adjoint : (v : TEnv (baseCtx c))
               → ip (baseCtx c) (env-map {Γ = baseCtx c} optimise (base-env c (emb c y) seed)) γ v
                 ≡ ⟨ ⟦ subst (inl c pf) s′ ⟧ γ₀ , D⟦ inl c pf y ⟧ γ₀ v ⟩
  dump-adjoint v =
    trans (ip-cong (baseCtx c) _ γ (∇₀ (inl c pf y) (subst (inl c pf) s′)) γ₀ dump-values v)
          (∇₀-correct (inl c pf y) (subst (inl c pf) s′) γ₀ v)

------------------------------------------------------------------------
-- What Main prints: the reverse pass seeded on the last binding

-- the innermost variable (the last binding) is a clean variable
emb-top : ∀ {Ψ is} (c : Chain (Ψ ▹ is)) → Σ′ (is ∈ clean c) (λ y → emb c y ≡ v₀)
emb-top (ε _)   = v₀ , refl
emb-top (c ▹ _) = v₀ , refl

top : (c : Chain (Δ ▹ ar p ▹ ar p)) → ar p ∈ clean c
top c = proj₁ (emb-top c)

-- For a chain printed with seed `seed` and a clean s′ with seed ≡ ren
-- (emb c) s′: the printed list is the optimised binding entries and
-- the optimised base entries, and for all base values γ₀ each base
-- entry, in the environment the generated code computes, is at every
-- position the gradient of the inlined objective at γ₀.
DumpCorrect : (c : Chain (Δ ▹ ar p ▹ ar p)) → PF c → E (Δ ▹ ar p ▹ ar p) (ar p) → E (clean c) (ar p) → Set
DumpCorrect c pf seed s′ =
  (chain-grads-opt c seed
   ≡ map opt-gradient (binding-grads c (λ x → x) (seed-env v₀ seed))
     ++ env-grads (baseNames c) (env-map {Γ = baseCtx c} optimise (base-env c v₀ seed)))
  × (∀ (γ₀ : Env (baseCtx c)) {s} (x : ar s ∈ baseCtx c) (i : P s)
     → ⟦ lookupE {baseCtx c} (env-map {Γ = baseCtx c} optimise (base-env c v₀ seed)) x ⟧
         (chain-env c v₀ seed γ₀) i
       ≡ ⟦ lookupE {baseCtx c} (∇₀ (inl c pf (top c)) (subst (inl c pf) s′)) x ⟧ γ₀ i)

dump-correct : (c : Chain (Δ ▹ ar p ▹ ar p)) (pf : PF c) (seed : E (Δ ▹ ar p ▹ ar p) (ar p))
               (s′ : E (clean c) (ar p)) → seed ≡ ren (emb c) s′ → DumpCorrect c pf seed s′
dump-correct c pf seed s′ refl =
  dump-grads c v₀ seed ,
  λ γ₀ x i → substEq (λ z → ⟦ lookupE {baseCtx c} (env-map {Γ = baseCtx c} optimise (base-env c z seed)) x ⟧
                                 (chain-env c z seed γ₀) i
                             ≡ ⟦ lookupE {baseCtx c} (∇₀ (inl c pf (top c)) (subst (inl c pf) s′)) x ⟧ γ₀ i)
                     (proj₂ (emb-top c)) (dump-values c pf (top c) s′ γ₀ x i)
