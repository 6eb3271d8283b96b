{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Let-chains: local array variables that survive differentiation
-- (paper §6.3).
--
-- A chain over a base context Γ₀ (with a name per variable) is a list
-- of named bindings; a binding of shape p over Δ extends the context to
-- Δ ▹ ar p ▹ ar p: first the placeholder d_x for the derivative of x,
-- then x itself (v₀).  A binding never mentions a placeholder.
--
-- Reverse mode over a chain (chain-grads) works in the full context Φ:
-- start from the gradient environment of the seed, then for each
-- binding x = e, last first, read off d_x (the entry of x) and add the
-- gradient of e with seed `var d_x`; finally read off the entries of
-- the base variables.  Sharing: every gradient refers to the d_
-- placeholders of later bindings instead of repeating their
-- expressions.
------------------------------------------------------------------------
module Spec.Lang.Chain where

open import Data.List using (List; []; _∷_; _++_; [_]; map)
open import Data.Product using (_×_; _,_; Σ)
open import Data.String using (String) renaming (_++_ to _++ˢ_)
open import Data.Unit using (⊤; tt)
open import Data.List.Properties using (++-assoc)
open import Relation.Binary.PropositionalEquality using (_≡_; refl; trans; sym; cong)

open import Spec.Array.Base using (S)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (Ren; ren)
open import Spec.Lang.AD using (EnvE; env-zero; lookupE; ∇)
open import Spec.Lang.Opt using (optimise)
open import Spec.Lang.Shift using (Offset; shift; off₀; off₁; off₂)

private
  variable
    Γ Δ Φ : Ctx
    is    : IS
    p     : S

------------------------------------------------------------------------
-- Names of context variables

Names : Ctx → Set
Names ε        = ⊤
Names (Γ ▹ is) = Names Γ × String

-- A base context given as names and shapes (all arrays), and its split
-- into a context and the names of its variables.
infixl 5 _▸_

data ChainCtx : Set where
  ε   : ChainCtx
  _▸_ : ChainCtx → String × S → ChainCtx

ce-split : ChainCtx → Σ Ctx Names
ce-split ε = ε , tt
ce-split (c ▸ (x , s)) with ce-split c
... | Γ , ns = Γ ▹ ar s , (ns , x)

------------------------------------------------------------------------
-- Chains

infixl 5 _▹_

data Chain : Ctx → Set where
  ε   : Names Γ → Chain Γ
  _▹_ : Chain Δ → String × E Δ (ar p) → Chain (Δ ▹ ar p ▹ ar p)

-- A forward binding, in its own scope.
record Binding : Set where
  constructor binding
  field
    name  : String
    {ctx} : Ctx
    shape : S
    expr  : E ctx (ar shape)

-- A gradient entry, in the full scope Φ: `name` is "d_" followed by
-- the name of the variable (`wrt`) it is the gradient for.
record Gradient (Φ : Ctx) : Set where
  constructor gradient
  field
    name  : String
    wrt   : String
    shape : S
    expr  : E Φ (ar shape)

-- The base context's variables, outermost first.
-- (Built from the inside out onto an accumulator, so that a context of
-- n variables costs n steps; names-list-▹ is the definition one reads.)
names-list′ : Names Γ → List (String × IS) → List (String × IS)
names-list′ {ε}      _        acc = acc
names-list′ {Γ ▹ is} (ns , x) acc = names-list′ ns ((x , is) ∷ acc)

names-list : Names Γ → List (String × IS)
names-list ns = names-list′ ns []

base-vars : Chain Γ → List (String × IS)
base-vars (ε ns)  = names-list ns
base-vars (c ▹ _) = base-vars c

-- The forward bindings in evaluation order (onto an accumulator:
-- bindings-▹ below is the definition one reads).
bindings′ : Chain Γ → List Binding → List Binding
bindings′ (c ▹ (x , e)) acc = bindings′ c (binding x _ e ∷ acc)
bindings′ (ε _)         acc = acc

bindings : Chain Γ → List Binding
bindings c = bindings′ c []

private
  bindings′-++ : (c : Chain Γ) (acc : List Binding) → bindings′ c acc ≡ bindings c ++ acc
  bindings′-++ (ε _)         acc = refl
  bindings′-++ (c ▹ (x , e)) acc =
    trans (bindings′-++ c (binding x _ e ∷ acc))
          (sym (trans (cong (_++ acc) (bindings′-++ c [ binding x _ e ]))
                      (++-assoc (bindings c) [ binding x _ e ] acc)))

bindings-▹ : (c : Chain Δ) (x : String) (e : E Δ (ar p))
           → bindings (c ▹ (x , e)) ≡ bindings c ++ [ binding x _ e ]
bindings-▹ c x e = bindings′-++ c [ binding x _ e ]

------------------------------------------------------------------------
-- Reverse mode over a chain

d_ : String → String
d_ x = "d_" ++ˢ x

-- Gradients of the array variables of the base context, outermost first.
-- (The base context Δ is Φ without its innermost variables, and
-- `shift o` puts it into Φ: Spec.Lang.Shift.)
base-grads : Names Δ → Offset Δ Φ → EnvE Φ Φ → List (Gradient Φ)
base-grads {ε}          _        o δ = []
base-grads {Δ ▹ ar s}   (ns , x) o δ =
  base-grads ns (off₁ o) δ ++ [ gradient (d_ x) x s (lookupE δ (shift o v₀)) ]
base-grads {Δ ▹ ix _}   (ns , _) o δ = base-grads ns (off₁ o) δ

-- `grads c o δ`: c is a prefix of the full chain, its scope Δ is the
-- full scope Φ without its `by o` innermost variables (shift o renames
-- Δ into Φ by adding that number to every index: one addition a
-- variable, where a weakening composed per binding would cost one step
-- per binding after c), δ holds the gradients accumulated by the
-- bindings after c.
grads : Chain Δ → Offset Δ Φ → EnvE Φ Φ → List (Gradient Φ)
grads (ε ns)        o δ = base-grads ns o δ
grads (c ▹ (x , e)) o δ =
  gradient (d_ x) x _ (lookupE δ (shift o v₀))
  ∷ grads c (off₂ o) (∇ (ren (shift (off₂ o)) e) (var (shift o v₁)) δ)

-- The reverse pass of a chain whose variable y is seeded with `seed`:
-- one entry per binding, last first, then one per base array variable.
chain-grads : Chain Φ → ar p ∈ Φ → E Φ (ar p) → List (Gradient Φ)
chain-grads {Φ = Φ} c y seed = grads c off₀ (∇ (var y) seed (env-zero {Φ}))

-- The same, seeding the last binding (v₀).
chain-grads₀ : Chain (Δ ▹ ar p ▹ ar p) → E (Δ ▹ ar p ▹ ar p) (ar p)
             → List (Gradient (Δ ▹ ar p ▹ ar p))
chain-grads₀ c seed = chain-grads c v₀ seed

-- Optimised gradients (each expression through Spec.Lang.Opt.optimise).
opt-gradient : Gradient Φ → Gradient Φ
opt-gradient (gradient n w s e) = gradient n w s (optimise e)

chain-grads-opt : Chain (Δ ▹ ar p ▹ ar p) → E (Δ ▹ ar p ▹ ar p) (ar p)
                → List (Gradient (Δ ▹ ar p ▹ ar p))
chain-grads-opt c seed = map opt-gradient (chain-grads₀ c seed)
