"""Sensitivity classes of event digests (issue 26; docs/search.md "Sensitivity").

An event may carry a class of a profile, ``{"profile_id", "class"}``: a replay's digest
has its uploader's (the transcript is as sensitive as the uploader's view:
:func:`replay_class`), and a writer may give its own event one it is cleared for. An
event above a caller's clearance is absent for it on every read: a search filters it out
inside the index (both adapters, lexical and dense: :meth:`EventClasses.visible` is the
query's ``classes``), a GET answers ``404``, and promotion reads unclassified events only.

A class is read in its own profile's order, and only for a caller that may use that
profile: a class of a profile the caller may not use, or that no longer lists it, is
above every caller but the service's own jobs (fail closed).
"""

from __future__ import annotations

from memnet.domain import sensitivity_views as views
from memnet.domain.callers import ANY, FULL_CLEARANCE, Caller
from memnet.domain.errors import BadRequest, Forbidden
from memnet.domain.event_model import label
from memnet.domain.profiles import Profile
from memnet.services.events.records import EventClass, EventRecord
from memnet.services.profiles.registry import ProfileRegistry


class EventClasses:
    """The profiles' classes as events use them."""

    def __init__(self, registry: ProfileRegistry) -> None:
        self._registry = registry
        profiles = (registry.get(p) for p in registry.profile_ids())
        self._classed = [p for p in profiles if p is not None and p.sensitivity("") is not None]

    def visible(self, caller: Caller) -> tuple[str, ...] | None:
        """The class labels (:attr:`~memnet.services.events.records.EventClass.label`) of events
        ``caller`` may see beside unclassified ones; None: every event (the service's
        jobs, or no profile has classes, so no event can have been given one)."""
        if not self._classed or caller.clearance == FULL_CLEARANCE:
            return None
        labels: list[str] = []
        for profile in self._classed:
            if ANY in caller.profiles or profile.profile_id in caller.profiles:
                rules = profile.sensitivity("")
                assert rules is not None  # only classed profiles are kept
                level = views.clearance(caller, rules)
                labels += [label(profile.profile_id, c) for c in rules.classes[1 : level + 1]]
        return tuple(sorted(labels))

    def sees(self, caller: Caller, record: EventRecord) -> bool:
        """Whether ``caller`` may see the event ``record``."""
        return record.shown(self.visible(caller))

    def checked(self, caller: Caller, named: EventClass | None) -> EventClass | None:
        """The class a writer gave its event, checked: a class of a profile the writer
        may use (403/404 as for any use of a profile), one the profile lists (400), the
        writer cleared for it (403 ``CLEARANCE_EXCEEDED``: it could not read its own
        event); the lowest class is stored as none (it hides nothing)."""
        if named is None:
            return None
        profile = self._registry.for_caller(caller, named.profile_id)
        rules = profile.sensitivity("")
        if rules is None or named.name not in rules.classes:
            raise BadRequest(
                "sensitivity.class must be one of the profile's sensitivity classes.",
                code="INVALID_FIELD",
                field="sensitivity",
            )
        rank = rules.classes.index(named.name)
        if rank > views.clearance(caller, rules):
            raise Forbidden(
                "The event's class is above the caller's clearance.", code="CLEARANCE_EXCEEDED"
            )
        return named if rank else None


def replay_class(profile: Profile, clearance: str | None) -> dict[str, str] | None:
    """The class of a replay's digests: its uploader's clearance in the replay's profile
    (``*``, an admin's upload: the highest), None when that is the lowest or the profile
    has no classes. The digest is written from the whole transcript, the uploader's own
    input, whose replay status needs that clearance too."""
    rules = profile.sensitivity("")
    if rules is None:
        return None
    rank = rules.clearance(clearance, admin=False)
    return {"profile_id": profile.profile_id, "class": rules.classes[rank]} if rank else None
