int tpuIsaPlaceholder;
