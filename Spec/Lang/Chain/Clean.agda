{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Placeholder-free chains, decided.
--
-- The clean scope of a chain is its base variables and bindings, without
-- the d_ placeholders; `emb c` puts it into the chain's scope.  A chain
-- is placeholder-free (`PF`) when every binding x = e is, as a term, a
-- renaming `ren (emb c) e′` of an expression e′ over the clean scope of
-- the chain before it: the side condition of Spec.Lang.Chain that the
-- types do not enforce, and a hypothesis of chain-∇-correct.
--
-- `pf?` decides it by running: it un-renames every binding
-- (Spec.Lang.Unren) through the partial inverse of emb, which is
-- undefined exactly at the placeholders; emb⁻ works on indices (a
-- few arithmetic steps a variable, not one step per binding).  The
-- model elaborator (Spec.Front.Model) runs it on every chain it
-- builds, and the built-in chains are checked by Spec.Model.PF.  It is
-- complete (Spec.Proofs.Chain.Clean: pf?-complete, pf?-nothing).
------------------------------------------------------------------------
module Spec.Lang.Chain.Clean where

open import Data.Bool using (Bool; true; false)
open import Data.Maybe using (Maybe; just; nothing; is-just)
open import Data.Product using (_×_; _,_; Σ)
open import Data.Unit using (⊤; tt)
open import Relation.Binary.PropositionalEquality using (_≡_; refl; cong; sym; trans)

open import Spec.Array.Base using (S)
open import Agda.Builtin.Nat using (div-helper)
open import Data.Nat using (ℕ; zero; suc; pred; _+_; _∸_; _<ᵇ_; _≟_)
open import Data.Nat.Properties using (+-suc; +-identityʳ)
open import Data.Bool using (if_then_else_)
open import Relation.Nullary using (yes; no)
open import Spec.Lang.Var using (var-≡)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (Ren; ren)
open import Spec.Lang.Chain using (Chain; ε; _▹_)
open import Spec.Lang.Unren using (Inv; unren)

private
  variable
    Δ : Ctx

------------------------------------------------------------------------
-- The clean scope

clean : Chain Δ → Ctx
clean (ε {Γ} _)             = Γ
clean (_▹_ {p = p} c _)     = clean c ▹ ar p

emb : (c : Chain Δ) → Ren (clean c) Δ
emb (ε _)   x                = x
emb (c ▹ _) (var# zero refl)  = v₀
emb (c ▹ _) (var# (suc n) p) = vₛ (vₛ (emb c (var# n p)))

-- The number of bindings.
size : Chain Δ → ℕ
size (ε _)   = 0
size (c ▹ _) = suc (size c)

-- emb on indices, with k bindings: the clean index i < k is the
-- binding i, at 2i (the placeholders are at the odd indices below 2k);
-- a base variable i ≥ k is at i + k.
emb-idx : ℕ → ℕ → ℕ
emb-idx k i = if i <ᵇ k then i + i else i + k

-- (public: Spec.Proofs.Chain.Clean proves emb⁻ complete with them)
emb-idx-suc : ∀ k i → emb-idx (suc k) (suc i) ≡ suc (suc (emb-idx k i))
emb-idx-suc k i with i <ᵇ k
... | true  = cong suc (+-suc i i)
... | false = cong suc (+-suc i k)

idx-emb : (c : Chain Δ) {is : IS} (x : is ∈ clean c) → idx (emb c x) ≡ emb-idx (size c) (idx x)
idx-emb (ε _)   (var# n p)        = sym (+-identityʳ n)
idx-emb (c ▹ _) (var# zero refl)  = refl
idx-emb (c ▹ _) (var# (suc n) p) =
  trans (cong (λ j → suc (suc j)) (idx-emb c (var# n p))) (sym (emb-idx-suc (size c) n))

‼-emb : (c : Chain Δ) (i : ℕ) → clean c ‼ i ≡ Δ ‼ emb-idx (size c) i
‼-emb (ε {Γ} _) i      = cong (Γ ‼_) (sym (+-identityʳ i))
‼-emb (c ▹ _)   zero    = refl
‼-emb {Δ} (c ▹ _) (suc i) = trans (‼-emb c i) (cong (Δ ‼_) (sym (emb-idx-suc (size c) i)))

-- the clean index emb could have sent n to (half of it among the
-- bindings, n - k among the base variables), to be checked
candidate : ℕ → ℕ → ℕ
candidate k n = if n <ᵇ k + k then div-helper 0 1 n 1 else n ∸ k

-- The partial inverse of emb: a binding or a base variable, not a
-- placeholder (k is the number of bindings, computed once by the
-- caller; each variable then costs a few arithmetic steps).
emb⁻ : (c : Chain Δ) (k : ℕ) → k ≡ size c → Inv (emb c)
emb⁻ {Δ} c k k≡ (var# n p) with emb-idx k (candidate k n) ≟ n
... | yes e = just (var# i (trans (‼-emb c i) (trans (cong (λ j → Δ ‼ emb-idx j i) (sym k≡)) (trans (cong (Δ ‼_) e) p)))
                   , var-≡ (sym (trans (idx-emb c _) (trans (cong (λ j → emb-idx j i) (sym k≡)) e))))
  where i = candidate k n
... | no _  = nothing

------------------------------------------------------------------------
-- Placeholder-free chains

PF : Chain Δ → Set
PF (ε _)                   = ⊤
PF (_▹_ {p = p} c (_ , e)) = PF c × Σ (E (clean c) (ar p)) (λ e′ → e ≡ ren (emb c) e′)

pf?′ : (c : Chain Δ) (k : ℕ) → k ≡ size c → Maybe (PF c)
pf?′ (ε _)         _       _  = just tt
pf?′ (c ▹ (_ , e)) (suc k) eq with pf?′ c k (cong pred eq) | unren (emb c) (emb⁻ c k (cong pred eq)) e
... | just pf | just pre = just (pf , pre)
... | _       | _        = nothing
pf?′ (c ▹ _)       zero    ()

pf? : (c : Chain Δ) → Maybe (PF c)
pf? c = pf?′ c (size c) refl
