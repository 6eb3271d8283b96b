{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Reverse mode with a sparse gradient environment: the ∇ of
-- Spec.Lang.AD, at a cost logarithmic in the context's length.
--
-- Spec.Lang.AD's environment `EnvE Δ Δ` holds an entry for every array
-- variable of Δ, innermost first: adding to the entry of a variable k
-- places out walks k cells, and a binder's body starts from a zero
-- entry for each of them.  Over a chain of n bindings, whose every
-- binding reads a parameter declared before all of them, that is
-- Θ(n²).  Here an environment (`Sparse Δ`) holds only the entries that
-- are not zero, in a binary trie keyed by the variable's *level* (its
-- position counted from the outermost variable, which a binder does
-- not change; Spec.Lang.Trie), each
-- node a short list of entries by shape (one in practice: the shape is
-- the variable's).  A variable's level is `n ∸ suc (idx x)`, n the
-- length of the context, carried as a number.
--
--   before: ∇ (w ⊠ h) s δ   walks δ to w and to h, and a binder body
--           starts from env-zero over all of Δ
--   after:  ∇ˢ n (w ⊠ h) s t   touches the trie at w's and h's levels
--           (O(log n) each); a binder's body starts from `leaf` and is
--           merged back along the paths it touched (so an occurrence
--           under d binders costs O(d log n); the front end bounds d
--           by its nesting limit)
--
-- `dense Δ t` reads a sparse environment as Spec.Lang.AD's (absent
-- entries are zero); Spec.Proofs.AD.Sparse proves
-- dense Δ (∇ˢ (len Δ) e s t) ≡ ∇ e s (dense Δ t): the same expressions,
-- so every theorem about ∇ holds of ∇ˢ.
------------------------------------------------------------------------
module Spec.Lang.AD.Sparse where

open import Data.List using (List; []; _∷_)
open import Data.Nat using (ℕ; suc; _∸_)
open import Data.Nat.Binary using (ℕᵇ; fromℕ)
open import Data.Product using (Σ; _,_)
open import Function using (_∘_)
open import Relation.Binary.PropositionalEquality using (refl)
open import Relation.Nullary using (yes; no)

open import Spec.Array.Base using (S)
open import Spec.Array.Properties using (_≟ₛ_)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (↑_)
open import Spec.Lang.AD using (EnvE; close; deriv; max-step)
open import Spec.Lang.Trie public using (Trie; leaf; node)
open import Spec.Lang.Trie using (at; modify)

private
  variable
    Γ Δ : Ctx
    is  : IS
    s u : S

------------------------------------------------------------------------
-- Levels

len : Ctx → ℕ
len ε       = 0
len (Γ ▹ _) = suc (len Γ)

-- the trie key of the variable x of a context of length n
key : ℕ → is ∈ Γ → ℕᵇ
key n x = fromℕ (n ∸ suc (idx x))

------------------------------------------------------------------------
-- Rows: the entries at one level, by shape

Row : Ctx → Set
Row Δ = List (Σ S λ s → E Δ (ar s))

find : (s : S) → Row Δ → E Δ (ar s)
find s []              = zero
find s ((s′ , e) ∷ r) with s′ ≟ₛ s
... | yes refl = e
... | no  _    = find s r

-- replace s's entry (or add one)
put : (s : S) → E Δ (ar s) → Row Δ → Row Δ
put s e []              = (s , e) ∷ []
put s e ((s′ , e′) ∷ r) with s′ ≟ₛ s
... | yes _ = (s , e) ∷ r
... | no  _ = (s′ , e′) ∷ put s e r

-- a body's row closed by the binder b and added to r
close-row : (∀ {q} → E (Δ ▹ ix u) (ar q) → E Δ (ar q)) → Row (Δ ▹ ix u) → Row Δ → Row Δ
close-row b []             r = r
close-row b ((s , z) ∷ zs) r = put s (close b z (find s r)) (close-row b zs r)

------------------------------------------------------------------------
-- Tries

Sparse : Ctx → Set
Sparse Δ = Trie (Row Δ)

row : Sparse Δ → ℕᵇ → Row Δ
row = at []

-- a body's environment closed by b and added: along the body's paths only
merge : (∀ {q} → E (Δ ▹ ix u) (ar q) → E Δ (ar q)) → Sparse (Δ ▹ ix u) → Sparse Δ → Sparse Δ
merge b leaf         t              = t
merge b (node z l r) leaf           = node (close-row b z []) (merge b l leaf) (merge b r leaf)
merge b (node z l r) (node d l′ r′) = node (close-row b z d) (merge b l l′) (merge b r r′)

------------------------------------------------------------------------
-- Entries

get : ℕᵇ → (s : S) → Sparse Δ → E Δ (ar s)
get k s t = find s (row t k)

-- the entry at k grows by sd (update δ x (_⊞ sd))
add : ℕᵇ → (s : S) → E Δ (ar s) → Sparse Δ → Sparse Δ
add k s sd = modify [] k (λ r → put s (find s r ⊞ sd) r)

-- the dense environment a sparse one stands for
dense : (Γ : Ctx) → Sparse Δ → EnvE Γ Δ
dense ε          t = _
dense (Γ ▹ ar s) t = dense Γ t , get (fromℕ (len Γ)) s t
dense (Γ ▹ ix s) t = dense Γ t

------------------------------------------------------------------------
-- The derivative (clause for clause Spec.Lang.AD.∇; n is len Δ)

∇ˢ : ℕ → E Δ is → E Δ is → Sparse Δ → Sparse Δ

bindˢ : ℕ → (∀ {q} → E (Δ ▹ ix u) (ar q) → E Δ (ar q))
      → E (Δ ▹ ix u) is → E (Δ ▹ ix u) is → Sparse Δ → Sparse Δ
bindˢ n b e s = merge b (∇ˢ (suc n) e s leaf)

∇ˢ n (var {is = ix _} x)     s t = t
∇ˢ n (var {is = ar q} x)     s t = add (key n x) q s t
∇ˢ n zero                    s t = t
∇ˢ n one                     s t = t
∇ˢ n (imaps e)               s   = bindˢ n sum e (sels (↑ s) (var v₀))
∇ˢ n (sels e i)              s   = ∇ˢ n e (imaps (zero-but (var v₀) (↑ i) (↑ s)))
∇ˢ n (imap e)                s   = bindˢ n sum e (sel (↑ s) (var v₀))
∇ˢ n (sel e i)               s   = ∇ˢ n e (imap (zero-but (var v₀) (↑ i) (↑ s)))
∇ˢ n (imapb m e)             s   = bindˢ n sum e (selb m (↑ s) (var v₀))
∇ˢ n (selb m e i)            s   = ∇ˢ n e (imapb m (zero-but (var v₀) (↑ i) (↑ s)))
∇ˢ n (sum e)                 s   = bindˢ n sum e (↑ s)
∇ˢ n (zero-but i j e)        s   = ∇ˢ n e (zero-but i j s)
∇ˢ n (slide i sp e su)       s   = ∇ˢ n e (backslide i s su sp)
∇ˢ n (backslide i e su sp)   s   = ∇ˢ n e (slide i sp s su)
∇ˢ n (logistic e)            s   = ∇ˢ n e (s ⊠ logistic e ⊠ (one ⊞ minus (logistic e)))
∇ˢ n (un Fn.step e)          s t = t
∇ˢ n (un Fn.detach e)        s t = t
∇ˢ n (un f e)                s   = ∇ˢ n e (s ⊠ deriv f e)
∇ˢ n (e ⊞ e₁)                s   = ∇ˢ n e s ∘ ∇ˢ n e₁ s
∇ˢ n (e ⊠ e₁)                s   = ∇ˢ n e (s ⊠ e₁) ∘ ∇ˢ n e₁ (s ⊠ e)
∇ˢ n (e ⊔ e₁)                s   = ∇ˢ n e (s ⊠ max-step e e₁) ∘ ∇ˢ n e₁ (s ⊠ (one ⊞ minus (max-step e e₁)))
∇ˢ n (scaledown k e)         s   = ∇ˢ n e (scaledown k s)
∇ˢ n (minus e)               s   = ∇ˢ n e (minus s)
∇ˢ n (ix-const i)            s t = t
∇ˢ n (div m i)               s t = t
∇ˢ n (mod m i)               s t = t
∇ˢ n (ix-plus i j su sp)     s t = t
∇ˢ n (argmax w e)            s t = t
∇ˢ n (ix-minus i j sp su e)  s   = bindˢ n (ix-minus i j sp su) e (↑ s)
∇ˢ n (ix-minusᵣ i j sp su e) s   = bindˢ n (ix-minusᵣ i j sp su) e (↑ s)
