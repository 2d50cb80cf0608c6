# output modules
