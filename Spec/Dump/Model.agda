{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The whole expression dump of a model (docs/dump-format.md §2), and
-- the table of models that `Main dump MODEL` prints.
--
-- A model is a chain (Spec.Lang.Chain) whose last binding is the one
-- the reverse pass is seeded on, the seed expression, the names of the
-- base variables that are data (role "input") and of those that are
-- fixed arrays (role "const"; every other base variable is a "param"),
-- and optional named outputs.  The dump lists
--   context   : the base variables, outermost first, with their roles;
--   chain     : the forward bindings, in evaluation order, as written;
--   seed      : the seed expression, of the last binding;
--   gradients : the reverse pass (chain-grads-opt: every expression
--               through the optimiser opt*; computed as
--               chain-grads-optˢ, with the sparse environment of
--               Spec.Lang.AD.Sparse, the same list by
--               Spec.Proofs.Chain.Sparse): one entry per binding,
--               last first, then one per param in context order (the
--               gradients of inputs and consts are computed but not
--               dumped).
------------------------------------------------------------------------
module Spec.Dump.Model where

open import Data.Bool using (Bool; true; false; not; if_then_else_; _∧_; _∨_)
open import Data.List as List using (List; []; _∷_)
open import Data.Product using (_×_; _,_)
open import Data.String as String using (String)
open import Relation.Binary.PropositionalEquality using (_≡_; refl)

open import Spec.Array.Base using (S; ι; _⊗_; ∣_∣)
open import Data.Nat using (ℕ)
open import Spec.Lang.Syntax using (Ctx; IS; ar; E; _▹_)
open import Spec.Lang.Chain
open import Spec.Lang.Chain.Sparse using (chain-grads-optˢ)
open import Spec.Dump.JSON
open import Spec.Dump.Expr using (shape; sortName; shapeOf; expr)

import Spec.Model.Dot as Dot
import Spec.Model.ChainExample as ChainExample
import Spec.Model.CNN as CNN
import Spec.Model.Ops as Ops

private
  variable
    Γ Δ : Ctx
    p   : S

generator : String
generator = "agda-spec 0.1.0"

------------------------------------------------------------------------
-- Parts of the dump

private
  member : String → List String → Bool
  member x = List.any (x String.==_)


  -- The inputs that feed a parameter's layer, for random initial
  -- weights: a parameter of shape u ⊗ s (one row per output) has |s|;
  -- a vector (a bias) has that of the parameter before it (1 if none).
  fan-in : ℕ → S → ℕ
  fan-in before (ι _)   = before
  fan-in before (_ ⊗ s) = ∣ s ∣

  -- A context entry without a gradient (an input, a const).
  fixed : String → String → IS → JSON
  fixed role x is = object (("name" , string x) ∷ ("shape" , shape (shapeOf is))
                            ∷ ("role" , string role) ∷ [])

  context-entries : List String → List String → ℕ → List (String × IS) → List JSON
  context-entries inputs consts before [] = []
  context-entries inputs consts before ((x , is) ∷ xs) with member x inputs | member x consts
  ... | true  | _     = fixed "input" x is ∷ context-entries inputs consts before xs
  ... | false | true  = fixed "const" x is ∷ context-entries inputs consts before xs
  ... | false | false = let n = fan-in before (shapeOf is) in
                        object (("name" , string x) ∷ ("shape" , shape (shapeOf is))
                                ∷ ("role" , string "param") ∷ ("fan_in" , nat n) ∷ [])
                        ∷ context-entries inputs consts n xs

  binding-entry : Binding → JSON
  binding-entry (binding x s e) = object
    (("name" , string x) ∷ ("shape" , shape s) ∷ ("expr" , expr e) ∷ [])

  gradient-entry : Gradient Γ → JSON
  gradient-entry (gradient x w s e) = object
    (("name" , string x) ∷ ("wrt" , string w) ∷ ("shape" , shape s) ∷ ("expr" , expr e) ∷ [])

  is-fixed : List String → Gradient Γ → Bool
  is-fixed fixed g = member (Gradient.wrt g) fixed

-- The reverse pass as dumped: the gradients of the inputs and the
-- consts (`fixed`) are dropped.
param-grads : List String → Chain (Δ ▹ ar p ▹ ar p) → E (Δ ▹ ar p ▹ ar p) (ar p)
            → List (Gradient (Δ ▹ ar p ▹ ar p))
param-grads fixed c seed =
  List.boolFilter (λ g → not (is-fixed fixed g)) (chain-grads-optˢ c seed)

-- The dump's version (docs/dump-format.md §7): 6 where an expression
-- holds erf or derf (the nodes version 6 added), else 5, so that a
-- dump without them is the one version 5 printed.
private
  version-6-op : String → JSON → Bool
  version-6-op k (string f) = (k String.== "op") ∧ ((f String.== "erf") ∨ (f String.== "derf"))
  version-6-op k _          = false

  mutual
    holds-6 : JSON → Bool
    holds-6 (array xs)   = holds-6s xs
    holds-6 (object kvs) = holds-6-fields kvs
    holds-6 _            = false

    holds-6s : List JSON → Bool
    holds-6s []       = false
    holds-6s (x ∷ xs) = holds-6 x ∨ holds-6s xs

    holds-6-fields : List (String × JSON) → Bool
    holds-6-fields []              = false
    holds-6-fields ((k , v) ∷ kvs) = version-6-op k v ∨ holds-6 v ∨ holds-6-fields kvs

version : List JSON → ℕ
version parts = if List.any holds-6 parts then 6 else 5

-- The name of the last binding.
last-name : Chain Γ → String
last-name (ε _)         = ""
last-name (_ ▹ (x , _)) = x

------------------------------------------------------------------------
-- The dump

-- dump name inputs consts data chain seed outputs: `data` names the
-- features and the target (a one-hot label) among the inputs, for the
-- runtime.
dump : String → List String → List String → List (String × String) → Chain (Δ ▹ ar p ▹ ar p)
     → E (Δ ▹ ar p ▹ ar p) (ar p) → List (String × String) → JSON
dump model inputs consts roles c seed outputs = object
  ( ("format"    , string "ad-expression-dump")
  ∷ ("version"   , nat (version (chain-json ∷ seed-entry ∷ grads-json ∷ [])))
  ∷ ("model"     , string model)
  ∷ ("generator" , string generator)
  ∷ ("context"   , array (context-entries inputs consts 1 (base-vars c)))
  ∷ ("chain"     , chain-json)
  ∷ ("seed"      , seed-entry)
  ∷ ("gradients" , grads-json)
  ∷ names-entry "outputs" outputs List.++ names-entry "data" roles)
  where
    chain-json seed-entry grads-json : JSON
    chain-json = array (List.map binding-entry (bindings c))
    seed-entry = object (("of" , string (last-name c)) ∷ ("expr" , expr seed) ∷ [])
    grads-json = array (List.map gradient-entry (param-grads (inputs List.++ consts) c seed))

    names-entry : String → List (String × String) → List (String × JSON)
    names-entry key [] = []
    names-entry key os = (key , object (List.map (λ (k , v) → k , string v) os)) ∷ []

------------------------------------------------------------------------
-- The models

models : List (String × JSON)
models =
    ("cnn"   , dump "cnn" CNN.inputs [] (("features" , "inp") ∷ ("target" , "target") ∷ [])
                    CNN.chain CNN.seed (("prediction" , "r") ∷ ("loss" , "loss") ∷ []))
  ∷ ("dot"   , dump "dot" Dot.inputs [] [] Dot.chain Dot.seed [])
  ∷ ("chain" , dump "chain" ChainExample.inputs [] [] ChainExample.chain ChainExample.seed [])
  ∷ ("ops"   , dump "ops" Ops.inputs [] [] Ops.chain Ops.seed (("loss" , "loss") ∷ []))
  ∷ []

_ : List.map (λ (x , _) → x) models ≡ "cnn" ∷ "dot" ∷ "chain" ∷ "ops" ∷ []
_ = refl

-- The reverse pass of the dot model: one entry for the binding r, then
-- one per param (the input `seed` gets none).
_ : List.map Gradient.name (param-grads Dot.inputs Dot.chain Dot.seed) ≡ "d_r" ∷ "d_a" ∷ "d_b" ∷ []
_ = refl
