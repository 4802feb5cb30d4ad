"""ON the GPU machine: what NVIDIA's Vulkan and wgpu report for subgroups and cooperative matrices."""
import vulkan as vk

app = vk.VkApplicationInfo(sType=vk.VK_STRUCTURE_TYPE_APPLICATION_INFO, apiVersion=vk.VK_MAKE_VERSION(1, 3, 0))
inst = vk.vkCreateInstance(vk.VkInstanceCreateInfo(sType=vk.VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, pApplicationInfo=app), None)
for pd in vk.vkEnumeratePhysicalDevices(inst):
    props = vk.vkGetPhysicalDeviceProperties(pd)
    exts = [e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(pd, None)]
    print("device:", props.deviceName, "api", props.apiVersion >> 22, (props.apiVersion >> 12) & 0x3ff)
    print("extensions:", [e for e in exts if any(k in e.lower() for k in ("cooperative", "subgroup", "shader_float16", "8bit", "16bit", "bfloat"))])
    sg = vk.VkPhysicalDeviceSubgroupProperties(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES)
    p2 = vk.VkPhysicalDeviceProperties2(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, pNext=sg)
    vk.vkGetPhysicalDeviceProperties2(pd, p2)
    print("subgroup size", sg.subgroupSize, "stages", hex(sg.supportedStages), "ops", hex(sg.supportedOperations))
    try:
        fn = vk.vkGetInstanceProcAddr(inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR")
        for p in fn(pd):
            print("coopmat KHR M,N,K", p.MSize, p.NSize, p.KSize, "A,B,C,R types", p.AType, p.BType, p.CType, p.ResultType, "scope", p.scope)
    except Exception as e:  # noqa: BLE001
        print("coopmat query:", type(e).__name__, e)
try:
    import wgpu
    ad = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    print("wgpu adapter:", ad.info, "features:", sorted(ad.features))
except Exception as e:  # noqa: BLE001
    print("wgpu:", type(e).__name__, e)
