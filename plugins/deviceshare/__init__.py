"""deviceshare: GPU sharing compatible with the real device plugins (spec/devices.md)."""

from .plugin import DeviceSharePlugin, NodeDeviceBuilder, build_families, device_builder, deviceshare_args

__all__ = ["DeviceSharePlugin", "NodeDeviceBuilder", "build_families", "device_builder", "deviceshare_args"]
