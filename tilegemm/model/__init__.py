"""The analytic performance model, the budget table: `tg.model.budget(kernel or config, shape, device)`.

    b = tg.model.budget(tg.model.GemmConfig(128, 256, 64, stages=4, consumers=2, producers=1),
                        shape=(8192, 8192, 8192), device="h200")
    print(b)                   # FLOPs, roofline, SMEM/registers/blocks per SM, waves, traffic, predicted time
"""
from .budget import Budget, Row, budget
from .config import GemmConfig, Promotion, Raster, resources
from .devices import DEVICES, DeviceSpec, get_device
from .from_graph import config_from_graph

__all__ = ["Budget", "DEVICES", "DeviceSpec", "GemmConfig", "Promotion", "Raster", "Row", "budget",
           "config_from_graph", "get_device", "resources"]
