"""Island-model GA: sub-populations that evolve apart and swap their best.

Each island is a generational GA (DEAP's uniform crossover and uniform integer
mutation, rank-weighted selection over its own population plus the migrants
it received from its neighbours).  Every ``migration_interval`` generations an
island sends its ``migrants`` best individuals to both ring neighbours; the
receivers put them into their next population.  Isolation keeps diversity and
migration spreads good building blocks (Whitley, Rana & Heckendorn, "The
island model genetic algorithm", J. Comput. Inf. Technol. 7(1), 1999).

Where the islands live is the transport's business: :class:`LocalRing` runs
several islands in one process (plain ``python app.py``); ``ensemble.mpi.MPIRing``
gives each MPI rank one island and moves migrants with non-blocking sends, so
a slow rank delays nobody.  Every migration sent or received is kept in
``IslandGA.migrations`` (and its ``state_dict``), which is what the tests and
reports read.
"""

from __future__ import annotations

import collections
import logging
import math
from collections.abc import Sequence
from typing import Any, ClassVar, Protocol

import numpy as np

from techniques.base import BaseTechnique
from techniques.cstuner.domains import space_domains
from techniques.cstuner.ga import GenerationalGA, Genome

__all__ = ["IslandGA", "IslandModel", "LocalRing", "Transport"]

_log = logging.getLogger("ensemble.techniques.island_ga")


class Transport(Protocol):
    """Moves migration messages between islands; must never block."""

    def send(self, src: int, dst: int, payload: dict[str, Any]) -> None: ...
    def poll(self, dst: int) -> list[dict[str, Any]]: ...


class LocalRing:
    """In-process mailboxes: several islands of one technique object."""

    def __init__(self) -> None:
        self._boxes: dict[int, collections.deque[dict[str, Any]]] = collections.defaultdict(collections.deque)

    def send(self, src: int, dst: int, payload: dict[str, Any]) -> None:
        self._boxes[dst].append(payload)

    def poll(self, dst: int) -> list[dict[str, Any]]:
        box = self._boxes[dst]
        out = list(box)
        box.clear()
        return out


class IslandModel:
    """The islands this process runs, their ring and the migration log.

    ``island_ids`` are this process's islands out of ``n_islands`` on the
    ring (all of them locally; one per rank under MPI).
    """

    def __init__(
        self,
        cardinalities: Sequence[int],
        decode: Any,
        rng: np.random.Generator,
        *,
        island_ids: Sequence[int],
        n_islands: int,
        transport: Transport,
        population: int = 16,
        migration_interval: int = 3,
        migrants: int = 2,
        seeds: dict[int, list[Genome]] | None = None,
        encoding: str = "integer",
        crossover_rate: float = 0.8,
        mutation_rate: float | None = None,
        to_wire: Any = None,
        from_wire: Any = None,
    ) -> None:
        if migration_interval < 1:
            raise ValueError(f"migration_interval={migration_interval} must be >= 1 (generations)")
        self.n_islands = n_islands
        self.transport = transport
        self.migration_interval = migration_interval
        self.migrants = migrants
        self.migrations: list[dict[str, Any]] = []
        self.stalled: set[int] = set()
        # Migrants travel as ``to_wire(genome)`` (default: the index list); a receiver whose
        # genes index other values (csTuner's per-rank re-indexed tuples) translates them back
        # with ``from_wire`` and drops what it cannot place.
        self.to_wire = to_wire or (lambda g: list(g))
        self.from_wire = from_wire or (lambda w: tuple(int(x) for x in w))
        seeds = seeds or {}
        children = rng.spawn(len(island_ids))
        self.islands: dict[int, GenerationalGA] = {
            i: GenerationalGA(cardinalities, decode, child, population=population, seeds=seeds.get(i, []),
                              encoding=encoding, crossover_rate=crossover_rate, mutation_rate=mutation_rate)
            for i, child in zip(island_ids, children)
        }
        self._turn = 0

    def neighbours(self, i: int) -> list[int]:
        """Ring neighbours (left, right) of island ``i``; fewer on tiny rings."""
        if self.n_islands < 2:
            return []
        return sorted({(i - 1) % self.n_islands, (i + 1) % self.n_islands} - {i})

    def ask(self, n: int) -> list[tuple[int, Genome]]:
        """Up to ``n`` (island, genome) pairs, taking islands in turn."""
        out: list[tuple[int, Genome]] = []
        ids = list(self.islands)
        idle = 0
        while len(out) < n and idle < len(ids):
            i = ids[self._turn % len(ids)]
            self._turn += 1
            got = self.islands[i].ask(1)
            if got:
                out.append((i, got[0]))
                idle = 0
            else:
                idle += 1
        return out

    def tell(self, island: int, genome: Genome, value: float) -> None:
        """Record a result; finish the island's generation when it is complete."""
        self.islands[island].tell(genome, value)
        self.settle(island)

    #: Generations in a row bred entirely from known genomes before an island counts as exhausted.
    STALL_LIMIT = 25

    def settle(self, island: int) -> None:
        """Migrate and breed while the island's current generation is fully known.

        An island whose new generations contain nothing unmeasured (a small,
        fully explored space) stops breeding after STALL_LIMIT tries and is
        listed in ``stalled``; the technique is done when all of them are.
        """
        ga = self.islands[island]
        idle = 0
        while ga.generation_complete and island not in self.stalled:
            self._migrate(island, ga)
            ga.advance()
            idle += 1
            if idle > self.STALL_LIMIT:
                self.stalled.add(island)

    def _migrate(self, island: int, ga: GenerationalGA) -> None:
        gen = ga.generation + 1   # generations completed
        for msg in self.transport.poll(island):
            placed = [(self.from_wire(w), v) for w, v in zip(msg["genomes"], msg["values"])]
            placed = [(g, v) for g, v in placed if g is not None]
            genomes = [g for g, _ in placed]
            for g, v in placed:
                if g not in ga.fitness and v is not None and math.isfinite(v):
                    ga.tell(g, v)     # the sender measured it: no second measurement
            ga.receive(genomes)
            _log.debug("island %d received %d migrant(s) from island %d (sent at generation %d)",
                       island, len(genomes), msg["from"], msg["generation"])
            self.migrations.append({
                "event": "received", "island": island, "from": msg["from"],
                "generation": gen, "sent_generation": msg["generation"],
                "genomes": [list(g) for g in genomes],
            })
        if gen % self.migration_interval == 0:
            best = ga.best(self.migrants)
            payload = {
                "from": island, "generation": gen,
                "genomes": [self.to_wire(g) for g, _ in best], "values": [v for _, v in best],
            }
            for dst in self.neighbours(island):
                self.transport.send(island, dst, payload)
                self.migrations.append({
                    "event": "sent", "island": island, "to": dst, "generation": gen,
                    "genomes": payload["genomes"],
                })


class IslandGA(BaseTechnique):
    """Island GA: several islands locally, or one per MPI rank (``transport="mpi"``).

    Options: ``islands`` (local island count; default one per MPI rank, or 4
    without MPI), ``population`` per
    island, ``migration_interval`` k (generations), ``migrants`` (best
    individuals sent to each neighbour), ``transport`` ("local", "mpi" or
    "auto": the MPI ring when each rank searches, ``ENSEMBLE_MPI_SEARCH=per-rank``), and
    ``island_seeds`` ({island: [config, ...]}) to start islands from given points.
    """

    name: ClassVar[str] = "IslandGA"
    summary: ClassVar[str] = "island-model GA, ring migration (one island per MPI rank or several locally)"

    def __init__(
        self,
        *,
        seed: int | None = None,
        islands: int | None = None,
        population: int = 16,
        migration_interval: int = 3,
        migrants: int = 2,
        transport: str = "auto",
        island_seeds: dict[int, list[dict[str, Any]]] | None = None,
    ) -> None:
        super().__init__(seed=seed)
        if transport not in ("auto", "local", "mpi"):
            from ensemble.errors import TechniqueError

            raise TechniqueError(f"transport={transport!r}: use 'local', 'mpi' or 'auto'")
        # Default: one island per MPI rank (run here when rank 0 searches for all), else 4.
        size = _mpi_size()
        self.n_local = islands if islands is not None else (size if size > 1 else 4)
        self.population = population
        self.migration_interval = migration_interval
        self.migrants = migrants
        self.transport_name = transport
        self.island_seeds = island_seeds or {}
        self.model: IslandModel | None = None
        self._ring: Any = None
        self._owner: dict[str, list[tuple[int, Genome]]] = {}   # pending hash -> islands waiting

    def _choose_transport(self) -> tuple[Any, list[int], int]:
        if self.transport_name == "local" or self.transport_name == "auto" and not _per_rank_mpi():
            return LocalRing(), list(range(self.n_local)), self.n_local
        from ensemble.mpi import MPIRing

        ring = MPIRing()
        return ring, [ring.rank], ring.size

    def _on_bind(self) -> None:
        self.domains = space_domains(self.space)
        self.names = list(self.domains)
        transport, ids, total = self._choose_transport()
        self._ring = transport
        self._ids, self._total = ids, total
        self._build({
            int(i): [g for g in (self._genome(c) for c in cfgs) if g is not None]
            for i, cfgs in self.island_seeds.items()
        })

    def _build(self, seeds: dict[int, list[Genome]]) -> None:
        self.model = IslandModel(
            [len(self.domains[n]) for n in self.names], self._decode, self.rng,
            island_ids=self._ids, n_islands=self._total, transport=self._ring, population=self.population,
            migration_interval=self.migration_interval, migrants=self.migrants, seeds=seeds,
        )

    def restore(self, trials: Sequence[Any]) -> None:
        """Resume: learn every stored value and restart the islands from the best of them.

        Island populations are not stored; they are rebuilt from the history in
        the database: the best known configurations are dealt round-robin to
        this process's islands (the best to the first island, the next to the
        second, ...), so a resumed run continues from where it was, and their
        values are known, so none is measured again.
        """
        super().restore(trials)
        if self.model is None:
            return
        ranked = sorted((t for t in trials if math.isfinite(t.value) and t.state == "OK"),
                        key=lambda t: t.value)
        genomes = [g for g in (self._genome(dict(t.config)) for t in ranked) if g is not None]
        # island i of n takes ranks i, i + n, ...: locally n = islands here; under
        # MPI every rank holds island i = its rank out of n = ranks.
        self._build({i: genomes[i::self._total][: self.population] for i in self.model.islands})
        for i, ga in self.model.islands.items():
            for g in ga.population:
                cfg = self._decode(g)
                known = self.value_of(cfg) if cfg is not None else None
                if known is not None:
                    ga.tell(g, known)
            self.model.settle(i)

    # -- encoding -----------------------------------------------------------
    def _genome(self, config: dict[str, Any]) -> Genome | None:
        try:
            return tuple(self.domains[n].index(config[n]) for n in self.names)
        except (KeyError, ValueError):
            return None

    def _decode(self, genome: Genome) -> dict[str, Any] | None:
        cfg = {n: self.domains[n][i] for n, i in zip(self.names, genome)}
        return cfg if self.space.is_valid(cfg) else None

    # -- ask / tell ---------------------------------------------------------
    @property
    def done(self) -> bool:
        """True when every local island has stopped finding unmeasured configurations."""
        return self.model is not None and self.model.stalled == set(self.model.islands)

    @property
    def migrations(self) -> list[dict[str, Any]]:
        """Every migration sent or received by this process's islands."""
        return self.model.migrations if self.model is not None else []

    def propose(self, n: int) -> list[dict[str, Any]]:
        self._require_bound()
        assert self.model is not None
        out: list[dict[str, Any]] = []
        for _ in range(4 * max(1, n)):
            if len(out) >= n:
                break
            picked = self.model.ask(n - len(out))
            if not picked:
                break
            for island, genome in picked:
                cfg = self._decode(genome)
                assert cfg is not None
                known = self.value_of(cfg)
                if known is not None:      # measured before (by anyone): no new trial
                    self.model.tell(island, genome, known)
                    continue
                h = self.hash(cfg)
                if h in self._owner:       # another island asked for it already: share the answer
                    self._owner[h].append((island, genome))
                    continue
                self._owner[h] = [(island, genome)]
                out.append(cfg)
        return out

    def _observe(self, trial: Any) -> None:
        owners = self._owner.pop(trial.config_hash, [])
        if self.model is not None:
            value = trial.value if math.isfinite(trial.value) else math.inf
            for island, genome in owners:
                self.model.tell(island, genome, value)

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        if self.model is not None:
            state["islands"] = {
                str(i): {"generation": ga.generation, "population": [list(g) for g in ga.population]}
                for i, ga in self.model.islands.items()
            }
            state["migrations"] = self.model.migrations[-200:]
        return state


def _mpi_size() -> int:
    """Ranks in this MPI job (1 without MPI)."""
    from ensemble import mpi

    info = mpi.detect()
    return info.size if info is not None else 1


def _per_rank_mpi() -> bool:
    """True when this process is one rank of a per-rank search under mpirun."""
    from ensemble import mpi

    return _mpi_size() > 1 and mpi.search_mode() == "per-rank"
