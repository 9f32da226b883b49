"""What governs one document request: the profile the caller uses, the binding that
covers the document, and that binding's sensitivity rules, resolved once per request
(:meth:`memnet.services.documents.service.DocumentService.resolve`) and handed down as one value."""

from __future__ import annotations

from dataclasses import dataclass

from memnet.domain.bindings import Binding
from memnet.domain.profiles import Profile
from memnet.domain.sensitivity import SensitivityRules


@dataclass(frozen=True)
class Governed:
    profile: Profile
    binding: Binding
    rules: SensitivityRules | None  # None: the binding has no sensitivity classes

    @classmethod
    def of(cls, profile: Profile, binding: Binding) -> Governed:
        return cls(profile, binding, profile.sensitivity(binding.binding_id))
